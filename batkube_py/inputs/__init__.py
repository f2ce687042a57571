"""What a run reads and what generates it: platforms, synthetic and communicating workloads, the public
datasets, the platform's topology labels. Pure; called by cli/, runs/ and experiments/."""
