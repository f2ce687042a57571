// The scheduler side of the simulated clock: the gate around Pop, the clock's nanosecond steps, the
// flushes the endpoint does on simulated time, idleness and the queue's next wake-up (control.go).
package main

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	internalqueue "k8s.io/kubernetes/pkg/scheduler/backend/queue"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/metrics"
)

// steppingQueue is the scheduler's queue with one change: while a run drives the clock, the clock moves
// one nanosecond before each pod enters the queue or goes back to it. On a clock that stands still
// through a step, every pod added or failed in it (a pod group's entity too) would get the same queue timestamp, and PrioritySort
// (priority, then timestamp) would leave their order to the heap; a cluster's clock moves between two
// such events, so they keep the order they happened in, as here. (A step at T+1 ms needs fewer than a
// million of them in the step at T.)
type steppingQueue struct {
	internalqueue.SchedulingQueue
	ctl *control
}

func (q *steppingQueue) Add(ctx context.Context, pod *v1.Pod) {
	q.ctl.tick()
	q.SchedulingQueue.Add(ctx, pod)
}

func (q *steppingQueue) AddUnschedulablePodIfNotPresent(logger klog.Logger, pInfo *framework.QueuedPodInfo, cycle int64) error {
	q.ctl.tick()
	return q.SchedulingQueue.AddUnschedulablePodIfNotPresent(logger, pInfo, cycle)
}

// A pod group's failed cycle stamps its entity in AddAttemptedPodGroupIfNeeded: groups failed in one step
// keep the order they were tried in, as pods do.
func (q *steppingQueue) AddAttemptedPodGroupIfNeeded(logger klog.Logger, pgInfo *framework.QueuedPodGroupInfo, cycle int64, status *fwk.Status) error {
	q.ctl.tick()
	return q.SchedulingQueue.AddAttemptedPodGroupIfNeeded(logger, pgInfo, cycle, status)
}

func (c *control) tick() {
	c.mu.Lock()
	driven := c.run != ""
	c.mu.Unlock()
	if driven {
		c.clock.Step(time.Nanosecond)
	}
}

// waitPoppable keeps ScheduleOne out of Pop while a step is held, and while Pop would block: a Pop
// blocked on an empty queue would take the first pod a held step writes, before the step's other writes.
// It returns with c.popping set, under the same lock as c.held: once hold(true) has returned, nothing
// is popped until the next release but a pop that was already decided (and shows as popping).
func (c *control) waitPoppable() {
	pause := 20 * time.Microsecond
	for {
		c.mu.Lock()
		for c.held {
			c.cond.Wait()
		}
		c.mu.Unlock()
		if c.poppable() {
			c.mu.Lock()
			if !c.held {
				c.popping.Store(true)
				c.mu.Unlock()
				return
			}
			c.mu.Unlock()
			continue
		}
		time.Sleep(pause)
		pause = min(2*pause, 2*time.Millisecond)
	}
}

// poppable: activeQ has a pod, or backoffQ has one Pop takes at once when activeQ is empty (not one
// that failed with an error: those wait for their expiry).
func (c *control) poppable() bool {
	q := c.sched.SchedulingQueue
	if len(q.PodsInActiveQ()) > 0 {
		return true
	}
	for _, p := range q.PodsInBackoffQ() {
		if !c.errorBackoff(p) {
			return true
		}
	}
	return false
}

func (c *control) errorBackoff(p *v1.Pod) bool {
	info, ok := c.queued(p)
	return ok && info.UnschedulablePlugins.Len() == 0 && info.PendingPlugins.Len() == 0
}

// queued: what decides when a queued pod is retried: its own queueing parameters, or for a member of
// a pod group its group entity's (a member's BackoffExpiration is always empty; the group backs off
// as one, in the error backoff heap).
func (c *control) queued(p *v1.Pod) (*framework.QueueingParams, bool) {
	q := c.sched.SchedulingQueue
	if g := p.Spec.SchedulingGroup; g != nil && g.PodGroupName != nil {
		if pg, ok := q.GetPodGroup(*g.PodGroupName, p.Namespace, fwk.PodGroupKeyType); ok {
			return &pg.QueueingParams, true
		}
	}
	info, ok := q.GetPod(p.Name, p.Namespace, p.Spec.SchedulingGroup)
	if !ok {
		return nil, false
	}
	return &info.QueueingParams, true
}

func (c *control) hold(h bool) {
	c.mu.Lock()
	c.held = h
	c.mu.Unlock()
	c.cond.Broadcast()
}

type counts struct {
	binding   float64 // binding goroutines running
	preempts  float64 // preemptions whose victims the async executor was asked to evict
	preempted float64 // ... whose goroutine has finished
	scheduled float64 // successful bindings
}

// value reads one sample of a registered metric in-process (a full Gather costs ~15 ms).
func value(o any) float64 {
	m, ok := o.(prometheus.Metric)
	if !ok {
		return 0
	}
	var d dto.Metric
	if m.Write(&d) != nil {
		return 0
	}
	switch {
	case d.Histogram != nil:
		return float64(d.Histogram.GetSampleCount())
	case d.Counter != nil:
		return d.Counter.GetValue()
	case d.Gauge != nil:
		return d.Gauge.GetValue()
	}
	return 0
}

// handled: how many times the scheduler's event handlers have run for the event label.
func handled(label string) float64 {
	return value(metrics.EventHandlingLatency.WithLabelValues(label))
}

func (c *control) metrics() counts {
	return counts{
		binding:  value(metrics.Goroutines.WithLabelValues(metrics.Binding)),
		preempts: value(metrics.PreemptionVictims.ObserverMetric) + value(metrics.WorkloadPreemptionVictims.ObserverMetric),
		preempted: value(metrics.PreemptionGoroutinesExecutionTotal.WithLabelValues(metrics.GoroutineResultSuccess)) +
			value(metrics.PreemptionGoroutinesExecutionTotal.WithLabelValues(metrics.GoroutineResultError)),
		scheduled: value(metrics.PodSchedulingAttempts.ObserverMetric),
	}
}

// handlerCounts: the handler counts of every label the scheduler has recorded, from the registry.
func handlerCounts() map[string]float64 {
	out := map[string]float64{}
	families, err := legacyregistry.DefaultGatherer.Gather()
	if err != nil {
		return out
	}
	for _, f := range families {
		if f.GetName() != "scheduler_event_handling_duration_seconds" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "event" {
					out[l.GetValue()] += float64(m.GetHistogram().GetSampleCount())
				}
			}
		}
	}
	return out
}

// idle: nothing popped or poppable, no binding or preemption goroutine, and the scheduler's own writes
// (bindings) have come back through its informer (their handlers may requeue other pods).
func (c *control) idle() (bool, string) {
	if c.popping.Load() {
		return false, "popping"
	}
	if c.cycling.Load() {
		return false, "in a scheduling cycle"
	}
	q := c.sched.SchedulingQueue
	if len(q.InFlightPods()) > 0 {
		return false, "in flight"
	}
	if c.poppable() {
		return false, "poppable"
	}
	m := c.metrics()
	if m.binding > 0 {
		return false, "binding"
	}
	if seen := handled("AssignedPodAdd"); seen < m.scheduled+c.assignedBase {
		return false, fmt.Sprintf("bindings not yet seen (%v of %v)", seen, m.scheduled+c.assignedBase)
	}
	if m.preempted < m.preempts {
		return false, "preemption"
	}
	if c.popping.Load() || len(q.InFlightPods()) > 0 {
		return false, "popping"
	}
	return true, ""
}

// flushLeftover is the queue's flushUnschedulableEntitiesLeftover at a tick, through exported API: the
// same selection (tick - max(Timestamp, FlushTimestamp) > duration), the same marks, the same move
// (MoveAllToActiveOrBackoffQueue with the UnschedulableTimeout event).
func (c *control) flushLeftover(now time.Time) int {
	q := c.sched.SchedulingQueue
	move := map[types.UID]bool{}
	for _, p := range q.UnschedulablePods() {
		info, ok := q.GetPod(p.Name, p.Namespace, p.Spec.SchedulingGroup)
		if !ok {
			continue
		}
		last := info.Timestamp
		if info.FlushTimestamp.After(last) {
			last = info.FlushTimestamp
		}
		if now.Sub(last) > c.leftover {
			info.SetWasFlushedFromUnschedulable(true)
			info.SetFlushTimestamp(now)
			move[p.UID] = true
		}
	}
	if len(move) > 0 {
		q.MoveAllToActiveOrBackoffQueue(klog.Background(), framework.EventUnschedulableTimeout, nil, nil,
			func(p *v1.Pod) bool { return move[p.UID] })
	}
	return len(move)
}

// flushBackoff moves to activeQ the pods of backoffQ whose backoff window has passed, as the ticker's
// flushBackoffQCompleted does at a whole second. At the start of a step only error-backoff pods can be
// there (Pop takes the others whenever activeQ is empty), and those are what the ticker would move.
func (c *control) flushBackoff() {
	q := c.sched.SchedulingQueue
	window := c.clock.Now().Truncate(time.Second)
	due := map[string]*v1.Pod{}
	for _, p := range q.PodsInBackoffQ() {
		info, ok := c.queued(p)
		if ok && !info.BackoffExpiration.IsZero() && info.BackoffExpiration.Before(window) {
			due[p.Namespace+"/"+p.Name] = p
		}
	}
	if len(due) > 0 {
		q.Activate(klog.Background(), due)
	}
}

// state: the queue's sizes and the next simulated time at which the queue would move a pod by itself
// (an error backoff expiring on the 1-s ticker, or a leftover flush tick).
func (c *control) state() map[string]any {
	q := c.sched.SchedulingQueue
	now := c.clock.Now()
	var next *float64
	consider := func(t float64) {
		if next == nil || t < *next {
			next = &t
		}
	}
	backoff := q.PodsInBackoffQ()
	for _, p := range backoff {
		info, ok := c.queued(p)
		if ok && c.errorBackoff(p) && !info.BackoffExpiration.IsZero() {
			// retryable from the first whole second after its expiry (1-s ordering windows)
			consider(math.Floor(c.sim(info.BackoffExpiration)) + 1)
		}
	}
	unsched := q.UnschedulablePods()
	for _, p := range unsched {
		info, ok := q.GetPod(p.Name, p.Namespace, p.Spec.SchedulingGroup)
		if !ok {
			continue
		}
		last := info.Timestamp
		if info.FlushTimestamp.After(last) {
			last = info.FlushTimestamp
		}
		// the first tick k*30 s with tick - last > duration
		due := c.sim(last) + c.leftover.Seconds()
		period := flushPeriod.Seconds()
		consider((math.Floor(due/period) + 1) * period)
	}
	m := c.metrics()
	out := map[string]any{
		"now":           c.sim(now),
		"active":        len(q.PodsInActiveQ()),
		"backoff":       len(backoff),
		"unschedulable": len(unsched),
		"in_flight":     len(q.InFlightPods()),
		"scheduled":     m.scheduled,
		"leftover":      c.leftover.Seconds(),
		// requests that waited for a restarting kube-apiserver (patient.go), for the run's fault record
		"patient": map[string]int64{"refused": refusedDials.Load(), "cut": cutRequests.Load()},
	}
	if next != nil {
		out["next_wakeup"] = *next
	}
	return out
}
