package main

import (
	"reflect"
	"unsafe"

	qcache "sigs.k8s.io/kueue/pkg/cache/queue"
	"sigs.k8s.io/kueue/pkg/scheduler"
	"sigs.k8s.io/kueue/pkg/util/routine"
)

// serialAdmissions makes each admission cycle's writes land before the next cycle takes its heads.
// Kueue's scheduler writes an admission from a goroutine (its admissionRoutineWrapper, unexported, set
// through reflection as quiet.go reads the requeuer) while the next cycle already runs. When that cycle preempts
// a workload the previous one has just admitted (one admitted by borrowing, reclaimed by the lender's next
// head), the eviction and the admission race in the apiserver; when the admission lands last it drops the
// Evicted condition ("clearing admission: ... the object has been modified"), the victim runs on and its
// preemptor waits for an eviction that never comes: 1 run in 2 on a 45-job multi-tenant workload
// (2026-11-27). Held here, every run takes the order the Kueue twin follows.
func serialAdmissions(s *scheduler.Scheduler, hold *holdChecker, queues *qcache.Manager) {
	w := routine.NewWrapper(
		func() { hold.admitting.Add(1) },
		func() {
			hold.admitting.Add(-1)
			queues.ResyncGaugeMetrics() // a CQ held while admitting reported no active workload
			queues.Broadcast()          // the scheduler may wait in Heads for this
		})
	f := reflect.ValueOf(s).Elem().FieldByName("admissionRoutineWrapper")
	reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem().Set(reflect.ValueOf(w))
}
