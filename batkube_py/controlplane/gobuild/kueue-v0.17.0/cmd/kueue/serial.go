package main

import (
	"fmt"
	"reflect"
	"time"
	"unsafe"

	"k8s.io/apimachinery/pkg/watch"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	qcache "sigs.k8s.io/kueue/pkg/cache/queue"
	"sigs.k8s.io/kueue/pkg/scheduler"
	"sigs.k8s.io/kueue/pkg/util/routine"
	"sigs.k8s.io/kueue/pkg/workload"
)

// How long an admission may hold the next cycle while Kueue's controllers take it in (wall time).
const admissionSettle = 10 * time.Second

// serialAdmissions makes each admission cycle's writes, and what Kueue's controllers do about them, land
// before the next cycle takes its heads. Kueue's scheduler writes an admission from a goroutine (its
// admissionRoutineWrapper, unexported, set through reflection as quiet.go reads the requeuer) while the
// next cycle already runs. When that cycle preempts a workload the previous one has just admitted (one
// admitted by borrowing, reclaimed by the lender's next head):
//   - the eviction and the admission raced in the apiserver; when the admission landed last it dropped
//     the Evicted condition ("clearing admission: ... the object has been modified"), the victim ran on
//     and its preemptor waited for an eviction that never came: 1 run in 2 on a 45-job multi-tenant
//     workload (2026-11-27);
//   - the job framework's pod reconciler ("Job admitted, unsuspending": the admission gate lifted) raced
//     the eviction: ungated first, the pod is stopped (deleted) and comes back as a new Workload at the
//     end of its queue; evicted first, the pod stays gated and the same Workload is queued again at its
//     first place, ahead of newer ones (hierarchical cohorts, 2026-11-27: `b16` or `c17` at t=39.04).
//
// Held here until the controllers are quiet (quiet.go, terms 1-4; the topology ungater's 1-s batch is
// not waited for: it lifts its own gate, not the admission's), every run takes the order the Kueue twin
// follows: the admitted job's pod reconciler has ungated it before the next cycle decides.
func serialAdmissions(s *scheduler.Scheduler, hold *holdChecker, queues *qcache.Manager, q *quiet) {
	w := routine.NewWrapper(func() { hold.admitting.Add(1) }, func() { hold.releaseWhenQuiet(q, queues) })
	f := reflect.ValueOf(s).Elem().FieldByName("admissionRoutineWrapper")
	reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem().Set(reflect.ValueOf(w))
}

// holdOnEvictions is the scheduler's client: a cycle that evicts a workload (a preemption) holds the next
// cycle until Kueue's controllers have taken the eviction in (the victim's quota released, the waiting
// workloads of its cohort requeued). Without it the next cycles raced that requeue: the preemptor, still
// pending its victim, and the other heads were tried again on whichever of the two states the cycle saw,
// and BestEffortFIFO moved past heads that the requeue would have put back (45-job workload on
// hierarchical cohorts: `a31`, then `a29`, preempting in one run of 4, 2026-11-27).
func holdOnEvictions(c client.Client, hold *holdChecker, queues *qcache.Manager, q *quiet) client.Client {
	held := func(obj client.Object, call func() error) error {
		wl, ok := obj.(*kueue.Workload)
		if !ok || !workload.IsEvicted(wl) {
			return call()
		}
		hold.admitting.Add(1)
		defer func() { go hold.releaseWhenQuiet(q, queues) }()
		return call()
	}
	return interceptor.NewClient(withWatch{c}, interceptor.Funcs{
		Patch: func(ctx ctxT, c client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
			return held(obj, func() error { return c.Patch(ctx, obj, p, opts...) })
		},
		Update: func(ctx ctxT, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			return held(obj, func() error { return c.Update(ctx, obj, opts...) })
		},
		SubResourcePatch: func(ctx ctxT, c client.Client, sub string, obj client.Object, p client.Patch,
			opts ...client.SubResourcePatchOption) error {
			return held(obj, func() error { return c.SubResource(sub).Patch(ctx, obj, p, opts...) })
		},
		SubResourceUpdate: func(ctx ctxT, c client.Client, sub string, obj client.Object,
			opts ...client.SubResourceUpdateOption) error {
			return held(obj, func() error { return c.SubResource(sub).Update(ctx, obj, opts...) })
		},
	})
}

// withWatch gives the manager's client the Watch the interceptor's type asks for (never called here).
type withWatch struct{ client.Client }

func (withWatch) Watch(ctxT, client.ObjectList, ...client.ListOption) (watch.Interface, error) {
	return nil, fmt.Errorf("watch not supported")
}

// releaseWhenQuiet ends one hold once Kueue's controllers are quiet (or after admissionSettle).
func (h *holdChecker) releaseWhenQuiet(q *quiet, queues *qcache.Manager) {
	if why := q.waitQuiet(time.Now().Add(admissionSettle)); why != "" {
		ctrl.Log.WithName("batkube").Info("cycle released before Kueue's controllers were quiet", "why", why)
	}
	h.admitting.Add(-1)
	queues.ResyncGaugeMetrics() // a CQ held while admitting reported no active workload
	queues.Broadcast()          // the scheduler may wait in Heads for this
}

// waitQuiet polls quietTerms until it holds on `stable` consecutive polls; "" then, else the last
// reason at deadline.
func (q *quiet) waitQuiet(deadline time.Time) string {
	streak := 0
	for {
		ok, why, _ := q.quietTerms(0, false)
		if ok {
			streak++
			if streak >= stable {
				return ""
			}
		} else {
			streak = 0
		}
		if time.Now().After(deadline) {
			return why
		}
		time.Sleep(poll)
	}
}
