// The garbage collector's part this control plane lacks (it runs no kube-controller-manager): a Workload
// whose owner pod is deleted is deleted too, as the garbage collector would delete it. Without it, the
// Workload of a pod Kueue preempted stays, is requeued and may be admitted again with no pod to run.
package main

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	"sigs.k8s.io/kueue/pkg/controller/jobframework"
)

var podGVK = schema.GroupVersionKind{Version: "v1", Kind: "Pod"}

// collect deletes the Workloads owned by each deleted pod, one pod at a time, through Kueue's own client
// (its writes are tracked like Kueue's).
func (q *quiet) collect(ctx context.Context, c client.Client) {
	for {
		select {
		case <-ctx.Done():
			return
		case pod := <-q.gc:
			var list kueue.WorkloadList
			err := c.List(ctx, &list, client.InNamespace(pod.Namespace),
				jobframework.OwnerReferenceIndexFieldMatcher(podGVK, pod.Name))
			if err == nil {
				for i := range list.Items {
					for _, o := range list.Items[i].OwnerReferences {
						if o.UID == pod.UID {
							_ = client.IgnoreNotFound(c.Delete(ctx, &list.Items[i]))
						}
					}
				}
			}
			q.gcPending.Add(-1)
		}
	}
}
