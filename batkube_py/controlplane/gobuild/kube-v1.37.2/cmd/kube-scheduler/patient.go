package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	clientset "k8s.io/client-go/kubernetes"
	restclient "k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	schedulerappconfig "k8s.io/kubernetes/cmd/kube-scheduler/app/config"
	"k8s.io/kubernetes/cmd/kube-scheduler/app/options"
	"k8s.io/kubernetes/pkg/scheduler"
	netutils "k8s.io/utils/net"
)

// apiserverPatience bounds how long a connection to a restarting kube-apiserver is waited for.
const apiserverPatience = 120 * time.Second

// patientDial waits for a kube-apiserver that is restarting. A refused connection means nothing
// listens, so no byte of the request left: it is tried again every 50 ms (for up to `patience`) rather
// than failing the request. Upstream fails it, and a binding that fails puts its pod in error backoff,
// which a run on the simulated clock would turn into another schedule than a run without the restart.
func patientDial(patience time.Duration) func(ctx context.Context, network, address string) (net.Conn, error) {
	d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	return func(ctx context.Context, network, address string) (net.Conn, error) {
		deadline := time.Now().Add(patience)
		logged := false
		for {
			conn, err := d.DialContext(ctx, network, address)
			if err == nil || !errors.Is(err, syscall.ECONNREFUSED) || time.Now().After(deadline) {
				if logged && err == nil {
					klog.Background().Info("batkube: kube-apiserver is back", "address", address)
				}
				return conn, err
			}
			if !logged {
				klog.Background().Info("batkube: kube-apiserver refuses connections; waiting for it", "address", address)
				logged = true
			}
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
}

// config is options.Config (cmd/kube-scheduler/app/options) step for step, with the clients' dial
// made patient. Leader election is off in the control plane batkube starts, and refused here.
func config(ctx context.Context, o *options.Options) (*schedulerappconfig.Config, error) {
	logger := klog.FromContext(ctx)
	if o.SecureServing != nil {
		if err := o.SecureServing.MaybeDefaultWithSelfSignedCerts("localhost", nil, []net.IP{netutils.ParseIPSloppy("127.0.0.1")}); err != nil {
			return nil, fmt.Errorf("error creating self-signed certificates: %v", err)
		}
	}
	c := &schedulerappconfig.Config{}
	if err := o.ApplyTo(logger, c); err != nil {
		return nil, err
	}
	if c.ComponentConfig.LeaderElection.LeaderElect {
		return nil, fmt.Errorf("--batkube-control-address: leader election must be off (one scheduler drives the clock)")
	}
	c.KubeConfig.Dial = patientDial(apiserverPatience)
	client, err := clientset.NewForConfig(restclient.AddUserAgent(c.KubeConfig, "scheduler"))
	if err != nil {
		return nil, err
	}
	eventClient, err := clientset.NewForConfig(c.KubeConfig)
	if err != nil {
		return nil, err
	}
	c.EventBroadcaster = events.NewEventBroadcasterAdapterWithContext(ctx, eventClient)
	c.Client = client
	c.InformerFactory = scheduler.NewInformerFactory(client, 0, o.InformerName)
	dynClient := dynamic.NewForConfigOrDie(c.KubeConfig)
	c.DynInformerFactory = dynamicinformer.NewFilteredDynamicSharedInformerFactory(dynClient, 0, corev1.NamespaceAll, nil)
	c.ComponentGlobalsRegistry = o.ComponentGlobalsRegistry
	return c, nil
}
