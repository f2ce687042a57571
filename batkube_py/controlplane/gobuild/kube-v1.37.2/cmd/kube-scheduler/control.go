// The simulated-clock control endpoint (loopback HTTP, JSON).
//
// Until a run takes the clock, the scheduler is upstream's: the queue's clock follows the wall clock and
// the leftover flush runs every 30 wall seconds, so the wall-clock sync policies work on this binary too.
// A run (--sync queue) then drives it; one Batsim step at simulated time T is:
//
//	POST /begin?run=ID&t=T
//	                      hold the scheduler's pops and set the queue's clock to origin+T (origin: the
//	                      whole second after the clock's time when the run took it; returned, with the
//	                      scheduler's nextStartNodeIndex)
//	(the adapter writes the step's deletes, node changes and pods to the apiserver)
//	POST /settle?run=ID&want=L:N,...[&tick=K][&t=T]
//	                      wait until the scheduler's event handlers have run N times for each label L
//	                      (the adapter's writes are in the queue), do the leftover flush of the 30-s tick
//	                      K (simulated seconds) if given, let the scheduler pop, and answer once it has
//	                      nothing left to do at T (with t: begin at T first, for a step that wrote nothing)
//	POST /end?run=ID       give the clock back to the wall
//
// Everything here uses exported upstream API only: SchedulingQueue's listing and lookup methods,
// MoveAllToActiveOrBackoffQueue, the NextEntity function field, and the metrics registry.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/scheduler"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	clocktesting "k8s.io/utils/clock/testing"
)

// Where the queue's clock starts; runs that take it start at later whole seconds (their origin).
var epoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// The queue's own leftover duration: never reached, so its 30-s wall-clock flush moves nothing.
const never = 100 * 365 * 24 * time.Hour

// The leftover flush period upstream runs on the wall clock; here on simulated time from 0.
const flushPeriod = 30 * time.Second

type control struct {
	sched    *scheduler.Scheduler
	clock    *clocktesting.FakeClock
	leftover time.Duration

	mu      sync.Mutex
	cond    *sync.Cond
	held    bool
	run     string    // the run that drives the clock ("" : the wall clock does)
	origin  time.Time // that run's simulated time 0
	popping atomic.Bool
	// a scheduling cycle runs (from its pop until ScheduleOne asks for the next entity): a pod group's
	// members are Done before its cycle requeues the group (AddAttemptedPodGroupIfNeeded)
	cycling atomic.Bool
	steps   sync.Mutex // one request that moves the clock or the gate at a time
	popped  []string   // the pods popped since the step's settle began, in order (c.mu)
	// AssignedPodAdd handler runs not caused by this scheduler's bindings (pods created bound, relists)
	assignedBase float64
}

func newControl(sched *scheduler.Scheduler, clock *clocktesting.FakeClock, leftover time.Duration) *control {
	c := &control{sched: sched, clock: clock, leftover: leftover}
	c.cond = sync.NewCond(&c.mu)
	sched.SchedulingQueue = &steppingQueue{SchedulingQueue: sched.SchedulingQueue, ctl: c}
	inner := sched.NextEntity
	sched.NextEntity = func(logger klog.Logger) (framework.QueuedEntityInfo, error) {
		c.cycling.Store(false) // ScheduleOne is back for the next entity: the last cycle has ended
		c.waitPoppable()
		defer c.popping.Store(false)
		e, err := inner(logger)
		if e != nil {
			c.cycling.Store(true)
			c.mu.Lock()
			if c.run != "" {
				e.ForEachPodInfo(func(p *framework.QueuedPodInfo) bool {
					c.popped = append(c.popped, p.Pod.Name)
					return true
				})
			}
			c.mu.Unlock()
		}
		return e, err
	}
	return c
}

func (c *control) sim(t time.Time) float64 { return t.Sub(c.origin).Seconds() }

// wall keeps the clock on wall time and runs the leftover flush every 30 wall seconds while no run
// drives the clock: upstream's behaviour.
func (c *control) wall(ctx context.Context) {
	last := time.Now()
	lastFlush := last
	for ctx.Err() == nil {
		time.Sleep(time.Millisecond)
		now := time.Now()
		c.steps.Lock()
		if c.run == "" {
			c.clock.Step(now.Sub(last))
			if now.Sub(lastFlush) >= flushPeriod {
				c.flushLeftover(c.clock.Now())
				lastFlush = now
			}
		}
		c.steps.Unlock()
		last = now
	}
}

func (c *control) serve(ctx context.Context, address string) error {
	if !strings.HasPrefix(address, "127.0.0.1:") && !strings.HasPrefix(address, "localhost:") {
		return fmt.Errorf("--batkube-control-address must be a loopback host:port, not %q", address)
	}
	ln, err := net.Listen("tcp", address)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/ready", func(w http.ResponseWriter, r *http.Request) {
		c.steps.Lock()
		defer c.steps.Unlock()
		c.reply(w, map[string]any{"run": c.run, "events": handlerCounts(), "scheduled": c.metrics().scheduled})
	})
	mux.HandleFunc("/begin", c.begin)
	mux.HandleFunc("/settle", c.settle)
	mux.HandleFunc("/end", c.end)
	srv := &http.Server{Handler: mux}
	go func() { _ = srv.Serve(ln) }()
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	go c.wall(ctx)
	return nil
}

// reply always states its length (never chunked), so a client can read it with one header.
func (c *control) reply(w http.ResponseWriter, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	_, _ = w.Write(body)
}

// owner: the run named in the request drives the clock (taking it if nobody does); "" if it may not.
func (c *control) owner(w http.ResponseWriter, r *http.Request) bool {
	run := r.URL.Query().Get("run")
	if run == "" {
		http.Error(w, "run: the driving run's id expected", http.StatusBadRequest)
		return false
	}
	if c.run == "" {
		c.mu.Lock()
		c.run = run
		c.mu.Unlock()
		c.assignedBase = handled("AssignedPodAdd") - c.metrics().scheduled
		c.origin = c.clock.Now().Truncate(time.Second).Add(time.Second)
		klog.Background().Info("batkube: a run drives the queue's clock", "run", run, "origin", c.origin)
	}
	if c.run != run {
		http.Error(w, fmt.Sprintf("run %s drives this scheduler's clock; one run at a time", c.run),
			http.StatusConflict)
		return false
	}
	return true
}

func (c *control) begin(w http.ResponseWriter, r *http.Request) {
	c.steps.Lock()
	defer c.steps.Unlock()
	if !c.owner(w, r) {
		return
	}
	c.hold(true)
	at, ok := c.setTime(w, r.URL.Query().Get("t"))
	if !ok {
		return
	}
	c.reply(w, map[string]any{"now": c.sim(at), "origin": c.origin.Unix(), "next_start_node_index": c.nextStart()})
}

// setTime moves the queue's clock to simulated time t (the pops held); false once it has answered the
// request with the error.
func (c *control) setTime(w http.ResponseWriter, arg string) (time.Time, bool) {
	t, err := strconv.ParseFloat(arg, 64)
	if err != nil || t < 0 || math.IsInf(t, 0) || math.IsNaN(t) {
		http.Error(w, "t: simulated seconds >= 0 expected", http.StatusBadRequest)
		return time.Time{}, false
	}
	at := c.origin.Add(time.Duration(math.Round(t * 1e9)))
	if now := c.clock.Now(); at.Before(now) {
		// the same simulated time again: the clock has only moved by the steps of tick()
		if now.Sub(at) >= time.Millisecond {
			http.Error(w, fmt.Sprintf("t=%v is before the clock (%v)", t, c.sim(now)), http.StatusConflict)
			return time.Time{}, false
		}
		at = now
	}
	c.clock.SetTime(at)
	return at, true
}

// nextStart is the scheduler's nextStartNodeIndex: where its next filtering starts in the node list (with
// parallelism 1 it decides score ties, so a twin must start where this scheduler is). Read with
// reflect while the pops are held; never written. -1 if the field is not there.
func (c *control) nextStart() int64 {
	f := reflect.ValueOf(c.sched).Elem().FieldByName("nextStartNodeIndex")
	if !f.IsValid() || !f.CanInt() {
		return -1
	}
	return f.Int()
}

func (c *control) end(w http.ResponseWriter, r *http.Request) {
	c.steps.Lock()
	defer c.steps.Unlock()
	if c.run != "" && c.run == r.URL.Query().Get("run") {
		c.mu.Lock()
		c.run = ""
		c.mu.Unlock()
		c.hold(false)
	}
	c.reply(w, map[string]any{"run": c.run})
}

func parseWant(s string) (map[string]float64, error) {
	want := map[string]float64{}
	if s == "" {
		return want, nil
	}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(kv, ":")
		n, err := strconv.ParseFloat(v, 64)
		if !ok || err != nil {
			return nil, fmt.Errorf("want: LABEL:COUNT,... expected, got %q", kv)
		}
		want[k] = n
	}
	return want, nil
}

func (c *control) settle(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	want, err := parseWant(q.Get("want"))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	timeout := 30 * time.Second
	if s := q.Get("timeout"); s != "" {
		if v, err := strconv.ParseFloat(s, 64); err == nil && v > 0 {
			timeout = time.Duration(v * float64(time.Second))
		}
	}
	c.steps.Lock()
	defer c.steps.Unlock()
	if !c.owner(w, r) {
		return
	}
	if arg := q.Get("t"); arg != "" { // a step with no write of its own: begin and settle in one request
		if _, ok := c.setTime(w, arg); !ok {
			return
		}
	}
	start := time.Now()
	deadline := start.Add(timeout)
	// 1. every change the adapter made is in the scheduler's cache and queue
	for {
		missing := ""
		for k, n := range want {
			if got := handled(k); got < n {
				missing = fmt.Sprintf("%s %v of %v", k, got, n)
				break
			}
		}
		if missing == "" {
			break
		}
		if time.Now().After(deadline) {
			http.Error(w, "event handlers did not run: "+missing, http.StatusGatewayTimeout)
			return
		}
		time.Sleep(200 * time.Microsecond)
	}
	// 2. the backoffQ flush (on the 1-s ticker upstream; the ticker was created on the wall clock, so
	// its ticks need not fall on this run's whole seconds) and the leftover flush, on simulated time
	c.flushBackoff()
	flushed := 0
	if s := q.Get("tick"); s != "" {
		tick, err := strconv.ParseFloat(s, 64)
		if err != nil {
			http.Error(w, "tick: simulated seconds expected", http.StatusBadRequest)
			return
		}
		flushed = c.flushLeftover(c.origin.Add(time.Duration(math.Round(tick * 1e9))))
	}
	// 3. pop until nothing is left to do at this time
	seen := time.Now()
	before := c.metrics()
	c.mu.Lock()
	c.popped = nil
	c.mu.Unlock()
	c.hold(false)
	idleSince := time.Time{}
	for {
		ok, why := c.idle()
		if ok {
			c.hold(true)
			// a pod that became poppable between the check and the hold is popped next step: look again
			if ok2, _ := c.idle(); ok2 {
				break
			}
			c.hold(false)
		}
		if !ok && why == "preemption" {
			// the executor skips the goroutine when every victim is already terminating: no counter
			// tells that apart from a goroutine still running, so a second of nothing else ends it
			if idleSince.IsZero() {
				idleSince = time.Now()
			} else if time.Since(idleSince) > time.Second {
				c.hold(true)
				klog.Background().Info("batkube: treating an unfinished preemption count as done")
				break
			}
		} else {
			idleSince = time.Time{}
		}
		if time.Now().After(deadline) {
			c.hold(true)
			http.Error(w, "scheduler not idle: "+why, http.StatusGatewayTimeout)
			return
		}
		time.Sleep(200 * time.Microsecond)
	}
	st := c.state()
	st["flushed"] = flushed
	c.mu.Lock()
	st["popped"] = c.popped
	c.popped = nil
	c.mu.Unlock()
	st["preempting"] = c.metrics().preempts > before.preempts
	// wall seconds waiting for the step's events, then for the scheduler's work (for benchmarks)
	st["wall"] = []float64{seen.Sub(start).Seconds(), time.Since(seen).Seconds()}
	c.reply(w, st)
}
