// The control endpoint (loopback HTTP, JSON). Kueue's admission scheduler is held outside steps, so that
// it decides on the whole of a step's changes, never on part of them. One Batsim step at simulated time T:
//
//	POST /begin?run=ID&t=T      take the clock (first call) and set it to T; the scheduler stays held
//	(the adapter writes the step's pod completions and new pods)
//	POST /settle?run=ID&pods_rv=R[&t=T]
//	                            wait until Kueue's controllers have handled every change up to the
//	                            adapter's pod resourceVersion R (quota released, Workloads created),
//	                            release the scheduler, wait until Kueue has nothing left to do at T, hold
//	                            it again, and answer with the pods Kueue admitted (ungated) and deleted
//	POST /end?run=ID            give the clock back
//	GET  /ready[?lq=ns/name,...] caches synced, the ClusterQueues and whether they are active, and which
//	                            of the given LocalQueues the queue manager knows
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"

	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	qcache "sigs.k8s.io/kueue/pkg/cache/queue"
	schdcache "sigs.k8s.io/kueue/pkg/cache/scheduler"
	"sigs.k8s.io/kueue/pkg/util/queue"
)

type ctxT = context.Context
type dtoLabel = dto.LabelPair

const kueueVersion = "v0.17.0"

// Consecutive polls every term must hold on, one polling interval apart.
const stable = 3
const poll = time.Millisecond

// After a reconcile failed or asked to run again, how long the terms must hold: its retry waits in the
// rate limiter (5 ms, doubling per failure of the same item) where no metric shows it.
const retryWindow = 250 * time.Millisecond

// holdChecker is the queue manager's StatusChecker: while held, or while an admission is being written
// (serial.go), no ClusterQueue gives the scheduler a head.
type holdChecker struct {
	cache     *schdcache.Cache
	held      atomic.Bool
	admitting atomic.Int64
}

func (h *holdChecker) ClusterQueueActive(name kueue.ClusterQueueReference) bool {
	return !h.held.Load() && h.admitting.Load() == 0 && h.cache.ClusterQueueActive(name)
}

type control struct {
	q      *quiet
	hold   *holdChecker
	queues *qcache.Manager
	cache  *schdcache.Cache
	clock  *clocktesting.FakeClock
	mgr    ctrl.Manager
	synced atomic.Bool

	steps sync.Mutex
	run   string
	waits map[string]int // polls spent per reason in the current settle (for benchmarks)
	// the reconcile retries counted so far, and when that count last changed
	retries   float64
	retriedAt time.Time
}

func newControl(q *quiet, hold *holdChecker, queues *qcache.Manager, cache *schdcache.Cache,
	clock *clocktesting.FakeClock, mgr ctrl.Manager) *control {
	hold.held.Store(true)
	return &control{q: q, hold: hold, queues: queues, cache: cache, clock: clock, mgr: mgr}
}

func (c *control) serve(ctx context.Context, address string) error {
	ln, err := net.Listen("tcp", address)
	if err != nil {
		return err
	}
	fmt.Printf("batkube-control-address=%s\n", ln.Addr())
	mux := http.NewServeMux()
	mux.HandleFunc("/ready", c.ready)
	mux.HandleFunc("/begin", c.step(c.begin))
	mux.HandleFunc("/settle", c.step(c.settle))
	mux.HandleFunc("/end", c.step(c.end))
	srv := &http.Server{Handler: mux}
	go func() { _ = srv.Serve(ln) }()
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	go func() {
		if c.mgr.GetCache().WaitForCacheSync(ctx) {
			c.synced.Store(true)
		}
	}()
	return nil
}

// reply states its length: the adapter's client reads one header and one body (controlplane/clock.py).
func reply(w http.ResponseWriter, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	_, _ = w.Write(body)
}

func (c *control) ready(w http.ResponseWriter, r *http.Request) {
	cqs := map[string]bool{}
	for _, name := range c.queues.GetClusterQueueNames() {
		cqs[string(name)] = c.cache.ClusterQueueActive(name)
	}
	lqs := map[string]string{}
	if arg := r.URL.Query().Get("lq"); arg != "" {
		for _, k := range strings.Split(arg, ",") {
			cq, _ := c.queues.ClusterQueueFromLocalQueue(queue.LocalQueueReference(k))
			lqs[k] = string(cq)
		}
	}
	c.steps.Lock()
	run := c.run
	c.steps.Unlock()
	reply(w, map[string]any{"synced": c.synced.Load(), "version": kueueVersion, "run": run,
		"cluster_queues": cqs, "local_queues": lqs})
}

// step: one request that moves the clock or the hold at a time, from the run that owns the clock.
func (c *control) step(h func(http.ResponseWriter, *http.Request)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		c.steps.Lock()
		defer c.steps.Unlock()
		run := r.URL.Query().Get("run")
		if run == "" {
			http.Error(w, "run: the run's id expected", http.StatusBadRequest)
			return
		}
		if c.run == "" {
			c.run = run
		} else if c.run != run {
			http.Error(w, fmt.Sprintf("run %s drives this Kueue's clock", c.run), http.StatusConflict)
			return
		}
		if arg := r.URL.Query().Get("t"); arg != "" && !c.setTime(w, arg) {
			return
		}
		h(w, r)
	}
}

func (c *control) setTime(w http.ResponseWriter, arg string) bool {
	t, err := strconv.ParseFloat(arg, 64)
	if err != nil || t < 0 || math.IsInf(t, 0) || math.IsNaN(t) {
		http.Error(w, "t: simulated seconds expected", http.StatusBadRequest)
		return false
	}
	at := epoch.Add(time.Duration(math.Round(t * 1e9)))
	if at.Before(c.clock.Now()) {
		http.Error(w, fmt.Sprintf("t=%v: the clock never goes back (at %v)", t, c.clock.Now().Sub(epoch).Seconds()),
			http.StatusBadRequest)
		return false
	}
	c.clock.SetTime(at)
	return true
}

func (c *control) begin(w http.ResponseWriter, _ *http.Request) {
	c.hold.held.Store(true)
	reply(w, map[string]any{"t": c.clock.Now().Sub(epoch).Seconds()})
}

func (c *control) end(w http.ResponseWriter, _ *http.Request) {
	c.run = ""
	reply(w, map[string]any{})
}

func (c *control) settle(w http.ResponseWriter, r *http.Request) {
	query := r.URL.Query()
	podsRV, _ := strconv.ParseInt(query.Get("pods_rv"), 10, 64)
	timeout := 60 * time.Second
	if v, err := strconv.ParseFloat(query.Get("timeout"), 64); err == nil && v > 0 {
		timeout = time.Duration(v * float64(time.Second))
	}
	start := time.Now()
	deadline := start.Add(timeout)
	before := readGauges()
	c.waits = map[string]int{}
	controllers := func() (bool, string) {
		ok, why, _ := c.q.controllersQuiet(podsRV)
		return ok, why
	}
	// 1. the step's changes handled, the scheduler held
	if why := c.wait(deadline, controllers); why != "" {
		http.Error(w, "Kueue did not take in the step's changes: "+why, http.StatusGatewayTimeout)
		return
	}
	seen := time.Now()
	trace := ctrl.Log.WithName("batkube").V(2)
	trace.Info("step's changes taken in", "t", c.clock.Now().Sub(epoch).Seconds(), "waits", c.waits)
	// 2. the scheduler released until nothing is left to do
	c.hold.held.Store(false)
	c.queues.ResyncGaugeMetrics()
	c.queues.Broadcast()
	var base *gauges
	var baseWrites int64
	why := c.wait(deadline, func() (bool, string) {
		ok, why, g := c.q.controllersQuiet(podsRV)
		if !ok {
			base = nil
			return false, why
		}
		if n := c.hold.admitting.Load(); n > 0 {
			base = nil
			return false, fmt.Sprintf("%d admissions being written", n)
		}
		if g.pendingActive == 0 {
			return true, ""
		}
		// a head that cannot be admitted and is requeued at once (StrictFIFO) keeps the scheduler
		// cycling: two more cycles that admit and write nothing
		writes := c.q.writes.Load()
		if base == nil || g.successes != base.successes || writes != baseWrites {
			base, baseWrites = &g, writes
			return false, "admission cycles running"
		}
		if g.attempts >= base.attempts+2 {
			return true, ""
		}
		return false, "admission cycles running"
	})
	c.hold.held.Store(true)
	if why != "" {
		http.Error(w, "Kueue not idle: "+why, http.StatusGatewayTimeout)
		return
	}
	// a cycle that had begun when the hold came back decides nothing new (see above); its writes, if
	// any, are waited for
	if why := c.wait(deadline, controllers); why != "" {
		http.Error(w, "Kueue not idle: "+why, http.StatusGatewayTimeout)
		return
	}
	after := readGauges()
	ungated, deleted := c.q.takeChanges()
	trace.Info("settled", "t", c.clock.Now().Sub(epoch).Seconds(), "ungated", ungated, "waits", c.waits)
	out := make([]map[string]any, 0, len(ungated))
	for _, name := range ungated {
		out = append(out, c.admission(r.Context(), name))
	}
	gone := make([]map[string]any, 0, len(deleted))
	for _, key := range deleted {
		gone = append(gone, c.eviction(r.Context(), key))
	}
	reply(w, map[string]any{
		"ungated": out, "deleted": gone,
		"cycles":   after.attempts - before.attempts,
		"admitted": after.successes - before.successes,
		"wall":     []float64{seen.Sub(start).Seconds(), time.Since(seen).Seconds()},
		"waits":    c.waits,
	})
}

// wait polls until cond holds on `stable` consecutive polls, and for retryWindow since the last
// reconcile retry; "" then, else the last reason at deadline.
func (c *control) wait(deadline time.Time, cond func() (bool, string)) string {
	streak := 0
	for {
		ok, why := cond()
		if r := readGauges().retries; r != c.retries {
			c.retries, c.retriedAt = r, time.Now()
		}
		if ok && time.Since(c.retriedAt) < retryWindow {
			ok, why = false, "a reconcile retry may be waiting"
		}
		if !ok {
			short, _, _ := strings.Cut(why, " (")
			c.waits[short]++
		}
		if ok {
			streak++
			if streak >= stable {
				return ""
			}
		} else {
			streak = 0
		}
		if time.Now().After(deadline) {
			if why == "" {
				why = "not stable"
			}
			return why
		}
		time.Sleep(poll)
	}
}

// admission: what Kueue decided for an ungated pod, read from its own caches.
func (c *control) admission(ctx context.Context, key string) map[string]any {
	ns, name, _ := strings.Cut(key, "/")
	out := map[string]any{"pod": name}
	cl := c.mgr.GetClient()
	var pod corev1.Pod
	if err := cl.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &pod); err != nil {
		return out
	}
	out["cluster_queue"] = pod.Labels["kueue.x-k8s.io/cluster-queue-name"]
	out["local_queue"] = pod.Labels["kueue.x-k8s.io/local-queue-name"]
	out["node_selector"] = pod.Spec.NodeSelector
	wl := workloadOf(ctx, c.mgr.GetClient(), &pod)
	if wl == nil {
		return out
	}
	out["workload"] = wl.Name
	flavors := map[string]string{}
	if wl.Status.Admission != nil {
		for _, psa := range wl.Status.Admission.PodSetAssignments {
			for res, f := range psa.Flavors {
				flavors[string(res)] = string(f)
			}
		}
	}
	names := make([]string, 0, len(flavors))
	for res := range flavors {
		names = append(names, res)
	}
	sort.Strings(names)
	out["flavors"] = flavors
	out["resources"] = names
	return out
}

// eviction: why Kueue stopped a pod, from its Workload's Preempted (else Evicted) condition.
func (c *control) eviction(ctx context.Context, key string) map[string]any {
	ns, name, _ := strings.Cut(key, "/")
	out := map[string]any{"pod": key, "why": "evicted by Kueue"}
	var pod corev1.Pod
	if err := c.mgr.GetClient().Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &pod); err == nil {
		if why, cq, ok := evictionWhy(workloadOf(ctx, c.mgr.GetClient(), &pod), &pod); ok {
			out["why"], out["cluster_queue"] = why, cq
			return out
		}
	}
	// the pod and its Workload may be gone by now: what they said when Kueue deleted the pod
	if w, ok := c.q.takeWhy(key); ok {
		out["why"], out["cluster_queue"] = w[0], w[1]
	}
	return out
}

// evictionWhy: the Workload's Preempted (else Evicted) condition, as pods.csv's reason.
func evictionWhy(wl *kueue.Workload, pod *corev1.Pod) (string, string, bool) {
	if wl == nil {
		return "", "", false
	}
	for _, kind := range []string{kueue.WorkloadPreempted, kueue.WorkloadEvicted} {
		for _, cond := range wl.Status.Conditions {
			if cond.Type == kind && cond.Status == "True" {
				why := fmt.Sprintf("%s by Kueue (%s): %s", strings.ToLower(kind), cond.Reason, cond.Message)
				return why, pod.Labels["kueue.x-k8s.io/cluster-queue-name"], true
			}
		}
	}
	return "", "", false
}

func workloadOf(ctx context.Context, cl client.Reader, pod *corev1.Pod) *kueue.Workload {
	if group := pod.Labels["kueue.x-k8s.io/pod-group-name"]; group != "" {
		var wl kueue.Workload
		if err := cl.Get(ctx, types.NamespacedName{Namespace: pod.Namespace, Name: group}, &wl); err == nil {
			return &wl
		}
		return nil
	}
	var list kueue.WorkloadList
	if err := cl.List(ctx, &list, client.InNamespace(pod.Namespace)); err != nil {
		return nil
	}
	for i := range list.Items {
		for _, o := range list.Items[i].OwnerReferences {
			if o.UID == pod.UID {
				return &list.Items[i]
			}
		}
	}
	return nil
}

// noWebhooks is the manager's webhook server: Kueue registers its webhooks on it and nothing serves
// them (the adapter creates pods as the pod webhook would leave them; docs/kueue.md).
type noWebhooks struct{}

func (noWebhooks) NeedLeaderElection() bool        { return false }
func (noWebhooks) Register(string, http.Handler)   {}
func (noWebhooks) Start(ctx context.Context) error { <-ctx.Done(); return nil }
func (noWebhooks) StartedChecker() healthz.Checker { return func(*http.Request) error { return nil } }
func (noWebhooks) WebhookMux() *http.ServeMux      { return http.NewServeMux() }
