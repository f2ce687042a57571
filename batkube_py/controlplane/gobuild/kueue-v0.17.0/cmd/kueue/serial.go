package main

import (
	"reflect"
	"time"
	"unsafe"

	ctrl "sigs.k8s.io/controller-runtime"

	qcache "sigs.k8s.io/kueue/pkg/cache/queue"
	"sigs.k8s.io/kueue/pkg/scheduler"
	"sigs.k8s.io/kueue/pkg/util/routine"
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
	log := ctrl.Log.WithName("batkube")
	w := routine.NewWrapper(
		func() { hold.admitting.Add(1) },
		func() {
			if why := q.waitQuiet(time.Now().Add(admissionSettle)); why != "" {
				log.Info("admission released before Kueue's controllers were quiet", "why", why)
			}
			hold.admitting.Add(-1)
			queues.ResyncGaugeMetrics() // a CQ held while admitting reported no active workload
			queues.Broadcast()          // the scheduler may wait in Heads for this
		})
	f := reflect.ValueOf(s).Elem().FieldByName("admissionRoutineWrapper")
	reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem().Set(reflect.ValueOf(w))
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
