// Kueue v0.17.0's controller from its unmodified packages, wired the way its own cmd/kueue wires them for
// the pod integration, with what a simulation needs (docs/kueue.md):
//
//   - one clock the adapter sets to Batsim's time, injected wherever Kueue accepts one (queue manager,
//     scheduler and preemptor, job framework);
//   - the inadmissible requeue without its 1-s wall-clock batch;
//   - the FIFO key of a Workload (its creationTimestamp) read from the simulated submission instant the
//     adapter puts in a pod label that Kueue copies onto the Workload (labelKeysToCopy), instead of the
//     apiserver's one-second wall stamp and random UID;
//   - no webhooks (the adapter creates pods as Kueue's pod webhook would leave them) and no TLS;
//   - topology-aware scheduling's controllers only with --batkube-tas (a queues file with TAS flavors):
//     they watch every pod and node, work a run without TAS flavors does not need;
//   - a loopback control endpoint (control.go) that holds the admission scheduler between steps and says
//     when Kueue has nothing left to do at the step's time (quiet.go).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"go.uber.org/zap/zapcore"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/discovery"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	configapi "sigs.k8s.io/kueue/apis/config/v1beta2"
	kueuealpha "sigs.k8s.io/kueue/apis/kueue/v1alpha1"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	qcache "sigs.k8s.io/kueue/pkg/cache/queue"
	schdcache "sigs.k8s.io/kueue/pkg/cache/scheduler"
	"sigs.k8s.io/kueue/pkg/config"
	"sigs.k8s.io/kueue/pkg/constants"
	"sigs.k8s.io/kueue/pkg/controller/core"
	"sigs.k8s.io/kueue/pkg/controller/core/indexer"
	"sigs.k8s.io/kueue/pkg/controller/jobframework"
	"sigs.k8s.io/kueue/pkg/controller/tas"
	tasindexer "sigs.k8s.io/kueue/pkg/controller/tas/indexer"
	_ "sigs.k8s.io/kueue/pkg/controller/jobs/pod"
	"sigs.k8s.io/kueue/pkg/metrics"
	"sigs.k8s.io/kueue/pkg/scheduler"
	preemptexpectations "sigs.k8s.io/kueue/pkg/scheduler/preemption/expectations"
	"sigs.k8s.io/kueue/pkg/util/kubeversion"
)

// The label the adapter sets on every pod: nanoseconds of simulated time since epoch at which the job was
// submitted (made strictly increasing across jobs, so that it also keeps the submission order of jobs
// submitted at the same instant).
const queueOrderLabel = "batkube.io/queue-order"

// Simulated time 0 of every run.
var epoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

var scheme = runtime.NewScheme()

func init() {
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(kueue.AddToScheme(scheme))
	utilruntime.Must(kueuealpha.AddToScheme(scheme))
	utilruntime.Must(configapi.AddToScheme(scheme))
}

func main() {
	configFile := flag.String("config", "", "Kueue Configuration (config.kueue.x-k8s.io/v1beta2)")
	address := flag.String("batkube-control-address", "127.0.0.1:0", "host:port of the control endpoint")
	version := flag.Bool("version", false, "print the Kueue version and exit")
	withTAS := flag.Bool("batkube-tas", false, "start topology-aware scheduling's controllers")
	logOpts := zap.Options{Level: zapcore.ErrorLevel}
	logOpts.BindFlags(flag.CommandLine)
	flag.Parse()
	if *version {
		fmt.Println("kueue " + kueueVersion)
		return
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&logOpts)))
	// --kubeconfig is controller-runtime's own flag
	if err := run(flag.Lookup("kubeconfig").Value.String(), *configFile, *address, *withTAS); err != nil {
		fmt.Fprintln(os.Stderr, "kueue:", err)
		os.Exit(1)
	}
}

func run(kubeconfig, configFile, address string, withTAS bool) error {
	log := ctrl.Log.WithName("batkube-kueue")
	options, cfg, err := config.Load(scheme, configFile)
	if err != nil {
		return fmt.Errorf("configuration %s: %w", configFile, err)
	}
	kubeConfig, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	kubeConfig.QPS, kubeConfig.Burst = 1e6, 1e6

	q := newQuiet()
	never := 100 * 365 * 24 * time.Hour
	options.Metrics = metricsserver.Options{BindAddress: "0"}
	options.HealthProbeBindAddress = "0"
	options.LeaderElection = false
	options.WebhookServer = noWebhooks{}
	options.Cache.SyncPeriod = &never // no resyncs: every handler sees the same events (quiet.go)
	options.Cache.NewInformer = q.newInformer
	if options.Cache.ByObject == nil {
		options.Cache.ByObject = map[client.Object]ctrlcache.ByObject{}
	}
	options.Cache.ByObject[&kueue.Workload{}] = ctrlcache.ByObject{Transform: queueOrder}
	options.NewClient = q.newClient

	mgr, err := ctrl.NewManager(kubeConfig, options)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctrl.LoggerInto(context.Background(), log))
	defer cancel()
	go func() {
		done := make(chan os.Signal, 2)
		signal.Notify(done, syscall.SIGINT, syscall.SIGTERM)
		<-done
		cancel()
	}()
	if err := indexer.Setup(ctx, mgr.GetFieldIndexer()); err != nil {
		return err
	}
	frameworks := jobframework.WithEnabledFrameworks(cfg.Integrations.Frameworks)
	if err := jobframework.SetupIndexes(ctx, mgr.GetFieldIndexer(), frameworks); err != nil {
		return err
	}
	if withTAS {
		if err := tasindexer.SetupIndexes(ctx, mgr.GetFieldIndexer()); err != nil {
			return err
		}
	}

	clock := clocktesting.NewFakeClock(epoch)
	cCache := schdcache.New(mgr.GetClient(),
		schdcache.WithFairSharing(cfg.FairSharing != nil),
		schdcache.WithAdmissionFairSharing(cfg.AdmissionFairSharing))
	requeuer := qcache.NewRequeuer(qcache.WithBatchPeriod(0))
	q.watchRequeuer(requeuer)
	if err := mgr.Add(requeuer); err != nil {
		return err
	}
	expectations := preemptexpectations.New()
	hold := &holdChecker{cache: cCache}
	queues := qcache.NewManager(mgr.GetClient(), hold, requeuer,
		qcache.WithClock(clock),
		qcache.WithPreemptionExpectations(expectations),
		qcache.WithAdmissionFairSharing(cfg.AdmissionFairSharing))
	go queues.CleanUpOnContext(ctx)
	go cCache.CleanUpOnContext(ctx)
	if failed, err := core.SetupControllers(mgr, queues, cCache, &cfg, nil, expectations, nil); err != nil {
		return fmt.Errorf("controller %s: %w", failed, err)
	}
	if withTAS {
		if failed, err := tas.SetupControllers(mgr, queues, cCache, &cfg, nil); err != nil {
			return fmt.Errorf("TAS controller %s: %w", failed, err)
		}
	}
	dc, err := discovery.NewDiscoveryClientForConfig(kubeConfig)
	if err != nil {
		return err
	}
	versions := kubeversion.NewServerVersionFetcher(dc)
	if err := versions.FetchServerVersion(); err != nil {
		return err
	}
	if err := mgr.Add(versions); err != nil {
		return err
	}
	nsSelector, err := metav1.LabelSelectorAsSelector(cfg.ManagedJobsNamespaceSelector)
	if err != nil {
		return err
	}
	if err := jobframework.SetupControllers(ctx, mgr, log,
		frameworks,
		jobframework.WithManageJobsWithoutQueueName(cfg.ManageJobsWithoutQueueName),
		jobframework.WithWaitForPodsReady(cfg.WaitForPodsReady),
		jobframework.WithKubeServerVersion(versions),
		jobframework.WithManagerName(constants.KueueName),
		jobframework.WithLabelKeysToCopy(cfg.Integrations.LabelKeysToCopy),
		jobframework.WithCache(cCache),
		jobframework.WithQueues(queues),
		jobframework.WithObjectRetentionPolicies(cfg.ObjectRetentionPolicies),
		jobframework.WithManagedJobsNamespaceSelector(nsSelector),
		jobframework.WithClock(clock),
	); err != nil {
		return err
	}
	sched := scheduler.New(queues, cCache, holdOnEvictions(mgr.GetClient(), hold, queues, q), mgr.GetEventRecorderFor(constants.AdmissionName),
		scheduler.WithClock(nil, clock),
		scheduler.WithPreemptionExpectations(expectations),
		scheduler.WithFairSharing(cfg.FairSharing),
		scheduler.WithAdmissionFairSharing(cfg.AdmissionFairSharing))
	serialAdmissions(sched, hold, queues, q)
	if err := mgr.Add(sched); err != nil {
		return err
	}
	metrics.Register()

	go q.collect(ctx, mgr.GetClient())
	ctl := newControl(q, hold, queues, cCache, clock, mgr)
	if err := ctl.serve(ctx, address); err != nil {
		return err
	}
	return mgr.Start(ctx)
}

// queueOrder gives a Workload the creation time its pods' submission label says (see queueOrderLabel).
// Only Kueue's in-memory copy changes: the apiserver keeps its own creationTimestamp on every update.
func queueOrder(obj any) (any, error) {
	wl, ok := obj.(*kueue.Workload)
	if !ok {
		return obj, nil
	}
	if ns, ok := parseOrder(wl.Labels[queueOrderLabel]); ok {
		wl.CreationTimestamp = metav1.NewTime(epoch.Add(time.Duration(ns)))
	}
	return wl, nil
}
