"""The compiled scheduler loops (metadata is in pyproject.toml).

Optional: without a C compiler the install still succeeds and the numpy code runs in their place.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "batkube_py.scheduler._kernels",
            ["batkube_py/scheduler/_kernels.pyx"],
            extra_compile_args=["-O2", "-ffp-contract=off"],
            optional=True,
        )
    ]
)
