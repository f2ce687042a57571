package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
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

// Connections that had to wait for kube-apiserver, and requests completed after their connection was
// cut: the settle reply reports them, so that the run's fault record shows the scheduler's side too.
var refusedDials, cutRequests atomic.Int64

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
				refusedDials.Add(1)
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

// patientTransport completes, once kube-apiserver is back, a request whose connection was cut before
// an answer came (a SIGKILLed apiserver) or that was answered 429/5xx: upstream fails it (a 429 or 503
// with Retry-After aside), which for a binding means an error backoff.
// Reads and patches (idempotent) and deletes (a second one finds nothing: the scheduler takes NotFound
// as done) are sent again. A binding may have been applied before the cut: the pod is read first, and
// if it is bound (only this scheduler binds) the binding's answer is a success; otherwise it is sent
// again. Anything else (events) fails as upstream.
type patientTransport struct{ next http.RoundTripper }

func (t patientTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	binding := req.Method == http.MethodPost && strings.HasSuffix(req.URL.Path, "/binding")
	resend := req.Method == http.MethodGet || req.Method == http.MethodPatch || req.Method == http.MethodDelete
	replayable := req.Body == nil || req.Body == http.NoBody || req.GetBody != nil
	if !failed(resp, err) || !(binding || resend) || !replayable || req.Context().Err() != nil {
		return resp, err
	}
	status := 0
	if resp != nil {
		status = resp.StatusCode
	}
	klog.Background().Info("batkube: a request was cut with its connection or answered 429/5xx; completing it", "method", req.Method, "path", req.URL.Path, "status", status, "err", err)
	cutRequests.Add(1)
	deadline := time.Now().Add(apiserverPatience)
	for time.Now().Before(deadline) && req.Context().Err() == nil {
		time.Sleep(50 * time.Millisecond)
		if binding {
			bound, berr := t.bound(req)
			if berr != nil {
				continue
			}
			if bound {
				discard(resp)
				return success(req), nil
			}
		}
		again := req.Clone(req.Context())
		if req.GetBody != nil {
			body, berr := req.GetBody()
			if berr != nil {
				return resp, err
			}
			again.Body = body
		}
		r, e := t.next.RoundTrip(again)
		discard(resp)
		resp, err = r, e
		if !failed(resp, err) {
			return resp, err
		}
	}
	return resp, err
}

// failed: the connection was cut under the request, or the apiserver answered that it could not serve
// it now (429, or 5xx: e.g. etcd paused behind it long enough for its client to drop the connection).
func failed(resp *http.Response, err error) bool {
	if err != nil {
		return cut(err)
	}
	switch resp.StatusCode {
	case http.StatusTooManyRequests, http.StatusInternalServerError, http.StatusBadGateway,
		http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

func discard(resp *http.Response) {
	if resp != nil && resp.Body != nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
	}
}

// bound reads the binding's pod (the binding URL without /binding) and says whether it has a node.
func (t patientTransport) bound(binding *http.Request) (bool, error) {
	get, err := http.NewRequestWithContext(binding.Context(), http.MethodGet, strings.TrimSuffix(binding.URL.String(), "/binding"), nil)
	if err != nil {
		return false, err
	}
	get.Header = binding.Header.Clone()
	get.Header.Set("Accept", "application/json")
	get.Header.Del("Content-Type")
	resp, err := t.next.RoundTrip(get)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return false, nil // gone, or an error: sending the binding again gives upstream's answer
	}
	var pod struct {
		Spec struct {
			NodeName string `json:"nodeName"`
		} `json:"spec"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&pod); err != nil {
		return false, nil
	}
	return pod.Spec.NodeName != "", nil
}

func success(req *http.Request) *http.Response {
	body := `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Success","code":201}`
	return &http.Response{StatusCode: http.StatusCreated, Status: "201 Created", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{"Content-Type": {"application/json"}}, Body: io.NopCloser(strings.NewReader(body)),
		ContentLength: int64(len(body)), Request: req}
}

// cut: the connection failed under the request (reset, closed, EOF before the answer).
func cut(err error) bool {
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, net.ErrClosed) {
		return true
	}
	msg := err.Error()
	return strings.Contains(msg, "connection lost") || strings.Contains(msg, "connection reset") ||
		strings.Contains(msg, "unexpected EOF")
}

// config is options.Config (cmd/kube-scheduler/app/options) step for step, with the clients' dial
// and transport made patient. Leader election is off in the control plane batkube starts, and refused here.
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
	c.KubeConfig.Wrap(func(rt http.RoundTripper) http.RoundTripper { return patientTransport{next: rt} })
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
