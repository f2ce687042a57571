// The garbage collector's part this control plane lacks (it runs no kube-controller-manager): a Workload
// none of whose owner pods exists any more is deleted, as the garbage collector would delete it (a pod
// group's Workload is owned by all its members: it goes with the last one). Without it, the Workload of
// a pod Kueue preempted stays, is requeued and may be admitted again with no pod to run.
package main

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	"sigs.k8s.io/kueue/pkg/controller/jobframework"
)

var podGVK = schema.GroupVersionKind{Version: "v1", Kind: "Pod"}

// collect deletes the Workloads owned by each deleted pod once no other owner pod is left in the cache,
// one pod at a time, through Kueue's own client (its writes are tracked like Kueue's).
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
					if ownedBy(&list.Items[i], pod) && !ownersLeft(ctx, c, &list.Items[i]) {
						_ = client.IgnoreNotFound(c.Delete(ctx, &list.Items[i]))
					}
				}
			}
			q.gcPending.Add(-1)
		}
	}
}

func ownedBy(wl *kueue.Workload, pod *corev1.Pod) bool {
	for _, o := range wl.OwnerReferences {
		if o.UID == pod.UID {
			return true
		}
	}
	return false
}

// ownersLeft: whether one of the Workload's owner pods (that name and UID) is still in the cache.
func ownersLeft(ctx context.Context, c client.Client, wl *kueue.Workload) bool {
	for _, o := range wl.OwnerReferences {
		if o.Kind != podGVK.Kind || o.APIVersion != podGVK.Version {
			continue
		}
		var p corev1.Pod
		err := c.Get(ctx, types.NamespacedName{Namespace: wl.Namespace, Name: o.Name}, &p)
		if err == nil && p.UID == o.UID {
			return true
		}
	}
	return false
}
