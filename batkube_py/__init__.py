"""batkube-py: Kubernetes scheduling on Batsim-simulated clusters."""

__version__ = "0.1.0"
