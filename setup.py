"""The compiled scheduler loops and the double's FairBottleneck solve (metadata is in pyproject.toml).

Optional: without a C compiler the install still succeeds and the numpy code runs in their place (the
double solves per component in Python and numpy, to the same bits).
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "batkube_py.scheduler._kernels",
            ["batkube_py/scheduler/_kernels.pyx"],
            extra_compile_args=["-O2", "-ffp-contract=off"],
            optional=True,
        ),
        Extension(
            "batkube_py.batsim_double._fairbottleneck",
            ["batkube_py/batsim_double/_fairbottleneck.pyx"],
            extra_compile_args=["-O2", "-ffp-contract=off"],
            optional=True,
        ),
    ]
)
