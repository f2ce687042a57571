// kube-scheduler 1.37.2 from the unmodified upstream packages, with one option more when
// --batkube-control-address is given: the scheduling queue runs on a clock the adapter sets to Batsim's
// time (scheduler.WithClock), and a loopback endpoint (control.go) says when the scheduler has nothing
// left to do at that time. Without the flag it is upstream's command (app.NewSchedulerCommand).
//
// The command below repeats cmd/kube-scheduler/app's NewSchedulerCommand, runCommand and Setup step for
// step (they take no scheduler.Option), adding WithClock, and options.Config with clients that wait for a
// restarting kube-apiserver (patient.go); then it calls app.Run as upstream does.
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apiserver/pkg/server"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/component-base/cli"
	cliflag "k8s.io/component-base/cli/flag"
	"k8s.io/component-base/cli/globalflag"
	basecompatibility "k8s.io/component-base/compatibility"
	"k8s.io/component-base/featuregate"
	"k8s.io/component-base/logs"
	logsapi "k8s.io/component-base/logs/api/v1"
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	"k8s.io/component-base/version/verflag"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"
	schedulerserverconfig "k8s.io/kubernetes/cmd/kube-scheduler/app/config"
	"k8s.io/kubernetes/cmd/kube-scheduler/app/options"
	"k8s.io/kubernetes/pkg/scheduler"
	kubeschedulerconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/apis/config/latest"
	"k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	clocktesting "k8s.io/utils/clock/testing"
)

func main() {
	for _, a := range os.Args[1:] {
		if len(a) > 26 && a[:26] == "--batkube-control-address=" {
			os.Exit(cli.Run(newCommand(a[26:])))
		}
	}
	os.Exit(cli.Run(app.NewSchedulerCommand()))
}

// newCommand is app.NewSchedulerCommand with our RunE and one flag more.
func newCommand(address string) *cobra.Command {
	opts := options.NewOptions()
	cmd := &cobra.Command{
		Use: "kube-scheduler",
		PersistentPreRunE: func(*cobra.Command, []string) error {
			return opts.ComponentGlobalsRegistry.Set()
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runCommand(cmd, opts, address)
		},
	}
	nfs := opts.Flags
	verflag.AddFlags(nfs.FlagSet("global"))
	globalflag.AddGlobalFlags(nfs.FlagSet("global"), cmd.Name(), logs.SkipLoggingConfigurationFlags())
	nfs.FlagSet("batkube").String("batkube-control-address", address,
		"host:port of the simulated-clock control endpoint (loopback)")
	fs := cmd.Flags()
	for _, f := range nfs.FlagSets {
		fs.AddFlagSet(f)
	}
	cliflag.SetUsageAndHelpFunc(cmd, *nfs, 100)
	return cmd
}

// runCommand is app's runCommand with setup() for app.Setup.
func runCommand(cmd *cobra.Command, opts *options.Options, address string) error {
	verflag.PrintAndExitIfRequested()
	fg := opts.ComponentGlobalsRegistry.FeatureGateFor(basecompatibility.DefaultKubeComponent)
	if err := logsapi.ValidateAndApply(opts.Logs, fg); err != nil {
		fmt.Fprintf(os.Stderr, "%v\n", err)
		os.Exit(1)
	}
	cliflag.PrintFlags(cmd.Flags())
	if opts.InformerName == nil {
		informerName, err := cache.NewInformerName("kube-scheduler")
		if err != nil {
			return err
		}
		opts.InformerName = informerName
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-server.SetupSignalHandler()
		cancel()
	}()

	// The queue's clock starts one second before simulated time 0, so that the backoffQ flush's first
	// timer fires exactly at 0 and its 1-s ticker ticks on whole simulated seconds (control.go, start).
	fake := clocktesting.NewFakeClock(epoch.Add(-time.Second))
	cc, sched, leftover, err := setup(ctx, opts, fake)
	if err != nil {
		return err
	}
	fg.(featuregate.MutableFeatureGate).AddMetrics()
	opts.ComponentGlobalsRegistry.AddMetrics()

	ctl := newControl(sched, fake, leftover)
	if err := ctl.serve(ctx, address); err != nil {
		return err
	}
	return app.Run(ctx, cc, sched)
}

// setup is app.Setup plus scheduler.WithClock. The unschedulable-pods leftover flush runs on a 30-s
// wall-clock loop the clock does not drive: the queue gets an unreachable duration, and the control
// endpoint does that flush at the 30-s ticks of simulated time with the configured duration (returned).
func setup(ctx context.Context, opts *options.Options, clock *clocktesting.FakeClock) (
	*schedulerserverconfig.CompletedConfig, *scheduler.Scheduler, time.Duration, error) {
	cfg, err := latest.Default()
	if err != nil {
		return nil, nil, 0, err
	}
	opts.ComponentConfig = cfg
	if errs := opts.Validate(); len(errs) > 0 {
		return nil, nil, 0, utilerrors.NewAggregate(errs)
	}
	c, err := config(ctx, opts)
	if err != nil {
		return nil, nil, 0, err
	}
	cc := c.Complete()
	recorderFactory := func(name string) events.EventRecorderLogger {
		return cc.EventBroadcaster.NewRecorder(name)
	}
	completedProfiles := make([]kubeschedulerconfig.KubeSchedulerProfile, 0)
	sched, err := scheduler.New(ctx,
		cc.Client,
		cc.InformerFactory,
		cc.DynInformerFactory,
		recorderFactory,
		scheduler.WithComponentConfigVersion(cc.ComponentConfig.TypeMeta.APIVersion),
		scheduler.WithKubeConfig(cc.KubeConfig),
		scheduler.WithProfiles(cc.ComponentConfig.Profiles...),
		scheduler.WithPercentageOfNodesToScore(cc.ComponentConfig.PercentageOfNodesToScore),
		scheduler.WithFrameworkOutOfTreeRegistry(make(runtime.Registry)),
		scheduler.WithPodMaxBackoffSeconds(cc.ComponentConfig.PodMaxBackoffSeconds),
		scheduler.WithPodInitialBackoffSeconds(cc.ComponentConfig.PodInitialBackoffSeconds),
		scheduler.WithPodMaxInUnschedulablePodsDuration(never),
		scheduler.WithExtenders(cc.ComponentConfig.Extenders...),
		scheduler.WithParallelism(cc.ComponentConfig.Parallelism),
		scheduler.WithBuildFrameworkCapturer(func(profile kubeschedulerconfig.KubeSchedulerProfile) {
			completedProfiles = append(completedProfiles, profile)
		}),
		scheduler.WithClock(clock),
	)
	if err != nil {
		return nil, nil, 0, err
	}
	if err := options.LogOrWriteConfig(klog.FromContext(ctx), opts.WriteConfigTo, &cc.ComponentConfig, completedProfiles); err != nil {
		return nil, nil, 0, err
	}
	return &cc, sched, cc.PodMaxInUnschedulablePodsDuration, nil
}
