// When Kueue has nothing left to do at the step's time. Kueue is a set of controllers, a queue manager and
// an admission scheduler that talk through the apiserver, so "idle" is a conjunction, every term of which
// this process can observe from inside:
//
//  1. none of Kueue's API writes is in flight, and every pod and Workload it wrote has come back through
//     its informers (resourceVersions), as has every pod write of the adapter (the settle's watermark);
//  2. every event handler registered on an informer has run for every event that informer delivered
//     (handlers are counted per registration; no resyncs, so they all see the same events);
//  3. no controller workqueue holds a ready item and no reconcile runs (controller-runtime's metrics);
//  4. the inadmissible requeuer has no item waiting or being processed;
//  5. with the admission scheduler released: no ClusterQueue has an active pending workload, or (a
//     StrictFIFO head that cannot be admitted is retried forever) two more admission cycles ran and
//     changed nothing.
//
// The terms must hold on consecutive polls (see stable): a few of the transitions between them (a worker
// between taking an item and counting itself active) are not observable.
package main

import (
	"fmt"
	"reflect"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
)

const admissionGate = "kueue.x-k8s.io/admission"

// TAS: the gate Kueue's admission leaves on a pod with a topology assignment, for the topology ungater,
// which takes the pod's event after a 1-s wall-clock batch (constants.UpdatesBatchPeriod).
const topologyGate = "kueue.x-k8s.io/topology"

type quiet struct {
	inflight atomic.Int64
	writes   atomic.Int64

	mu       sync.Mutex
	want     map[string]int64     // object key -> the resourceVersion its informer must have delivered
	seen     map[string]int64     // object key -> the last resourceVersion delivered
	lastPod  int64                // the last pod resourceVersion delivered
	ungated  []string             // pods whose admission gate Kueue removed, in the order their informer saw it
	topology map[string]bool      // admitted pods still waiting for the topology ungater (TAS)
	deleted  []string             // pods (namespace/name) Kueue deleted (preemption, eviction), in call order
	why      map[string][2]string // their Workload's eviction (reason, ClusterQueue) when Kueue deleted them
	counters []*handlerCount

	requeuer reflect.Value // the inadmissible requeuer's workqueue (*Typed), read through reflection

	// the garbage collector's part (gc.go): Workloads whose owner pod is gone
	gc        chan *corev1.Pod
	gcPending atomic.Int64
}

type handlerCount struct {
	informer toolscache.SharedIndexInformer
	n        atomic.Int64
}

func newQuiet() *quiet {
	return &quiet{want: map[string]int64{}, seen: map[string]int64{}, topology: map[string]bool{},
		why: map[string][2]string{},
		gc:  make(chan *corev1.Pod, 1<<16)}
}

func rv(obj any) int64 {
	if o, ok := obj.(client.Object); ok {
		v, _ := strconv.ParseInt(o.GetResourceVersion(), 10, 64)
		return v
	}
	return 0
}

func key(obj any) (string, bool) {
	switch o := obj.(type) {
	case *corev1.Pod:
		return "pod/" + o.Namespace + "/" + o.Name, true
	case *kueue.Workload:
		return "workload/" + o.Namespace + "/" + o.Name, true
	}
	return "", false
}

// ---- 1. writes ----------------------------------------------------------------------------------

func (q *quiet) newClient(config *rest.Config, options client.Options) (client.Client, error) {
	c, err := client.NewWithWatch(config, options)
	if err != nil {
		return nil, err
	}
	return interceptor.NewClient(c, interceptor.Funcs{
		Create: func(ctx ctxT, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			return q.write(obj, 0, func() error { return c.Create(ctx, obj, opts...) })
		},
		Update: func(ctx ctxT, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			return q.write(obj, 0, func() error { return c.Update(ctx, obj, opts...) })
		},
		Patch: func(ctx ctxT, c client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
			return q.write(obj, 0, func() error { return c.Patch(ctx, obj, p, opts...) })
		},
		Delete: func(ctx ctxT, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			if pod, ok := obj.(*corev1.Pod); ok {
				why, cq, found := evictionWhy(workloadOf(ctx, c, pod), pod)
				q.mu.Lock()
				q.deleted = append(q.deleted, pod.Namespace+"/"+pod.Name)
				if found {
					q.why[pod.Namespace+"/"+pod.Name] = [2]string{why, cq}
				}
				q.mu.Unlock()
			}
			// the delete's event (an update that sets deletionTimestamp, or the removal) comes after it
			return q.write(obj, rv(obj)+1, func() error { return c.Delete(ctx, obj, opts...) })
		},
		SubResourceUpdate: func(ctx ctxT, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			return q.write(obj, 0, func() error { return c.SubResource(sub).Update(ctx, obj, opts...) })
		},
		SubResourcePatch: func(ctx ctxT, c client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
			return q.write(obj, 0, func() error { return c.SubResource(sub).Patch(ctx, obj, p, opts...) })
		},
	}), nil
}

// write runs one API call and records what its object's informer must deliver before Kueue is quiet:
// the resourceVersion the call returned (at least `after` for a delete, whose object is not refreshed).
func (q *quiet) write(obj client.Object, after int64, call func() error) error {
	q.inflight.Add(1)
	q.writes.Add(1)
	defer q.inflight.Add(-1)
	err := call()
	if err != nil {
		return err
	}
	if k, ok := key(obj); ok {
		need := max(rv(obj), after)
		q.mu.Lock()
		if need > q.want[k] && need > q.seen[k] { // its event may have come before the reply
			q.want[k] = need
		}
		q.mu.Unlock()
	}
	return nil
}

// ---- 2. informers and their handlers ------------------------------------------------------------

type countingInformer struct {
	toolscache.SharedIndexInformer
	q *quiet
}

func (q *quiet) newInformer(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration,
	indexers toolscache.Indexers) toolscache.SharedIndexInformer {
	inner := toolscache.NewSharedIndexInformer(lw, obj, resync, indexers)
	i := &countingInformer{SharedIndexInformer: inner, q: q}
	switch obj.(type) {
	case *corev1.Pod, *kueue.Workload:
		_, _ = i.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc:    func(o any) { q.observe(nil, o, false) },
			UpdateFunc: func(o, n any) { q.observe(o, n, false) },
			DeleteFunc: func(o any) { q.observe(nil, o, true) },
		})
	}
	return i
}

func (i *countingInformer) count(h toolscache.ResourceEventHandler) toolscache.ResourceEventHandler {
	c := &handlerCount{informer: i.SharedIndexInformer}
	i.q.mu.Lock()
	i.q.counters = append(i.q.counters, c)
	i.q.mu.Unlock()
	return toolscache.ResourceEventHandlerDetailedFuncs{
		AddFunc:    func(o any, initial bool) { h.OnAdd(o, initial); c.n.Add(1) },
		UpdateFunc: func(o, n any) { h.OnUpdate(o, n); c.n.Add(1) },
		DeleteFunc: func(o any) { h.OnDelete(o); c.n.Add(1) },
	}
}

func (i *countingInformer) AddEventHandler(h toolscache.ResourceEventHandler) (toolscache.ResourceEventHandlerRegistration, error) {
	return i.SharedIndexInformer.AddEventHandler(i.count(h))
}

func (i *countingInformer) AddEventHandlerWithResyncPeriod(h toolscache.ResourceEventHandler, d time.Duration) (toolscache.ResourceEventHandlerRegistration, error) {
	return i.SharedIndexInformer.AddEventHandlerWithResyncPeriod(i.count(h), d)
}

func (i *countingInformer) AddEventHandlerWithOptions(h toolscache.ResourceEventHandler, o toolscache.HandlerOptions) (toolscache.ResourceEventHandlerRegistration, error) {
	return i.SharedIndexInformer.AddEventHandlerWithOptions(i.count(h), o)
}

func (q *quiet) observe(old, obj any, deleted bool) {
	if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	k, ok := key(obj)
	if !ok {
		return
	}
	v := rv(obj)
	q.mu.Lock()
	defer q.mu.Unlock()
	if v > q.seen[k] {
		q.seen[k] = v
	}
	if w, ok := q.want[k]; ok && q.seen[k] >= w {
		delete(q.want, k)
	}
	if pod, ok := obj.(*corev1.Pod); ok {
		q.lastPod = max(q.lastPod, v)
		if old == nil && deleted {
			q.gcPending.Add(1)
			q.gc <- pod
		}
		if before, ok := old.(*corev1.Pod); ok && gated(before) && !gated(pod) {
			q.ungated = append(q.ungated, pod.Namespace+"/"+pod.Name)
		}
		if !deleted && !gated(pod) && hasGate(pod, topologyGate) {
			q.topology[k] = true
		} else {
			delete(q.topology, k)
		}
	}
}

func hasGate(p *corev1.Pod, name string) bool {
	for _, g := range p.Spec.SchedulingGates {
		if g.Name == name {
			return true
		}
	}
	return false
}

func gated(p *corev1.Pod) bool {
	return hasGate(p, admissionGate)
}

func (q *quiet) handlersCaughtUp() (bool, string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	per := map[toolscache.SharedIndexInformer]int64{}
	for _, c := range q.counters {
		n := c.n.Load()
		if m, ok := per[c.informer]; ok && m != n {
			return false, fmt.Sprintf("event handlers behind (%d vs %d)", m, n)
		}
		per[c.informer] = n
	}
	return true, ""
}

// ---- 3, 4. workqueues ---------------------------------------------------------------------------

// watchRequeuer keeps the requeuer's workqueue to read its dirty and processing sets (no metric names
// that queue, and its type is unexported).
func (q *quiet) watchRequeuer(r any) {
	f := reflect.ValueOf(r).Elem().FieldByName("queue")
	f = reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem() // the delaying queue (interface)
	typed := f.Elem().Elem().FieldByName("TypedInterface")             // its *Typed
	q.requeuer = typed.Elem().Elem()
}

func (q *quiet) requeuerBusy() int {
	if !q.requeuer.IsValid() {
		return 0
	}
	return q.requeuer.FieldByName("dirty").Len() + q.requeuer.FieldByName("processing").Len()
}

type gauges struct {
	depth, workers, pendingActive, attempts, successes, retries float64
}

func readGauges() gauges {
	var g gauges
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		return gauges{depth: -1}
	}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			switch f.GetName() {
			case "workqueue_depth":
				g.depth += m.GetGauge().GetValue()
			case "controller_runtime_active_workers":
				g.workers += m.GetGauge().GetValue()
			case "kueue_pending_workloads":
				if label(m.GetLabel(), "status") == "active" {
					g.pendingActive += m.GetGauge().GetValue()
				}
			case "controller_runtime_reconcile_total":
				// a reconcile that failed (a conflict, mostly) or asked to run again comes back after the
				// rate limiter's wall-clock delay, invisible to the workqueue's depth meanwhile (settle)
				if r := label(m.GetLabel(), "result"); r == "error" || r == "requeue" {
					g.retries += m.GetCounter().GetValue()
				}
			case "kueue_admission_attempts_total":
				g.attempts += m.GetCounter().GetValue()
				if label(m.GetLabel(), "result") == "success" {
					g.successes += m.GetCounter().GetValue()
				}
			}
		}
	}
	return g
}

func label(labels []*dtoLabel, name string) string {
	for _, l := range labels {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// ---- the conjunction ----------------------------------------------------------------------------

// controllersQuiet: terms 1-4, with podsRV the adapter's last pod resourceVersion.
func (q *quiet) controllersQuiet(podsRV int64) (bool, string, gauges) {
	return q.quietTerms(podsRV, true)
}

// quietTerms: controllersQuiet, with or without waiting for the topology ungater (its 1-s batch).
func (q *quiet) quietTerms(podsRV int64, ungater bool) (bool, string, gauges) {
	g := readGauges()
	if n := q.inflight.Load(); n > 0 {
		return false, fmt.Sprintf("%d API writes in flight", n), g
	}
	q.mu.Lock()
	waiting, last, topology := len(q.want), q.lastPod, len(q.topology)
	example := ""
	for k, v := range q.want {
		example = fmt.Sprintf("%s at %d, seen %d", k, v, q.seen[k])
		break
	}
	q.mu.Unlock()
	if waiting > 0 {
		return false, fmt.Sprintf("%d written objects not yet seen (%s)", waiting, example), g
	}
	if last < podsRV {
		return false, fmt.Sprintf("pod events up to %d not yet seen (at %d)", podsRV, last), g
	}
	if ok, why := q.handlersCaughtUp(); !ok {
		return false, why, g
	}
	if g.depth != 0 || g.workers != 0 {
		return false, fmt.Sprintf("controllers busy (queued %v, working %v)", g.depth, g.workers), g
	}
	if n := q.requeuerBusy(); n > 0 {
		return false, "inadmissible requeue pending", g
	}
	if n := q.gcPending.Load(); n > 0 {
		return false, fmt.Sprintf("%d deleted pods' Workloads to collect", n), g
	}
	if ungater && topology > 0 {
		return false, fmt.Sprintf("%d admitted pods waiting for the topology ungater", topology), g
	}
	return true, "", g
}

// takeWhy: what a deleted pod's Workload said when Kueue deleted the pod (once).
func (q *quiet) takeWhy(key string) ([2]string, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	w, ok := q.why[key]
	delete(q.why, key)
	return w, ok
}

// takeChanges: the pods Kueue ungated and deleted since the last call.
func (q *quiet) takeChanges() ([]string, []string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	u, d := q.ungated, q.deleted
	q.ungated, q.deleted = nil, nil
	return u, d
}

func parseOrder(s string) (int64, bool) {
	if s == "" {
		return 0, false
	}
	v, err := strconv.ParseInt(s, 10, 64)
	return v, err == nil && v >= 0
}
