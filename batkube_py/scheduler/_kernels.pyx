# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False, cdivision=True
"""Compiled loops for the default profile's three hottest steps.

At a thousand nodes each numpy step of a cycle costs about its call overhead, and these steps are a
dozen numpy calls each; one loop apiece does the same integer (and, for BalancedAllocation, float)
arithmetic, so the results are identical — tests/test_kernels.py holds every loop to the plugins'
general numpy code, which stays the reference and the fallback.
"""

import numpy as np

from libc.stdint cimport int64_t


def fit_mask(
    const int64_t[::1] free_cpu, const int64_t[::1] free_mem, const int64_t[::1] free_pods,
    int64_t cpu, int64_t memory,
):
    """NodeResourcesFit's verdict per node: a pod slot left, and room for each non-zero request."""
    cdef Py_ssize_t i, n = free_cpu.shape[0]
    out = np.empty(n, dtype=np.bool_)
    cdef unsigned char[::1] ok = out.view(np.uint8)
    for i in range(n):
        ok[i] = (
            free_pods[i] > 0
            and (cpu == 0 or free_cpu[i] >= cpu)
            and (memory == 0 or free_mem[i] >= memory)
        )
    return out


def least_allocated(
    const int64_t[::1] nz_cpu, const int64_t[::1] nz_mem,
    const int64_t[::1] alloc_cpu, const int64_t[::1] alloc_mem,
    const Py_ssize_t[:] idx, int64_t nonzero_cpu, int64_t nonzero_memory,
):
    """LeastAllocated with cpu:1, memory:1 on NonZeroRequested, on nodes that all model both (allocatable
    > 0): ((alloc - requested) × 100 // alloc, 0 when over) per resource, then their mean, floored."""
    cdef Py_ssize_t j, i, n = idx.shape[0]
    cdef int64_t c, m
    out = np.empty(n, dtype=np.int64)
    cdef int64_t[::1] s = out
    for j in range(n):
        i = idx[j]
        c = alloc_cpu[i] - nz_cpu[i] - nonzero_cpu
        m = alloc_mem[i] - nz_mem[i] - nonzero_memory
        c = c * 100 // alloc_cpu[i] if c > 0 else 0
        m = m * 100 // alloc_mem[i] if m > 0 else 0
        s[j] = (c + m) // 2
    return out


def least_allocated_cpu(
    const int64_t[::1] nz_cpu, const int64_t[::1] alloc_cpu, const Py_ssize_t[:] idx, int64_t nonzero_cpu,
):
    """LeastAllocated on nodes that model cpu only (memory skipped everywhere): the cpu term alone,
    (alloc - requested) × 100 // alloc, 0 when over (positive operands: C's division is Go's)."""
    cdef Py_ssize_t j, i, n = idx.shape[0]
    cdef int64_t c
    out = np.empty(n, dtype=np.int64)
    cdef int64_t[::1] s = out
    for j in range(n):
        i = idx[j]
        c = alloc_cpu[i] - nz_cpu[i] - nonzero_cpu
        s[j] = c * 100 // alloc_cpu[i] if c > 0 else 0
    return out


def balanced_allocation(
    const int64_t[::1] req_cpu, const int64_t[::1] req_mem,
    const int64_t[::1] alloc_cpu, const int64_t[::1] alloc_mem,
    const Py_ssize_t[:] idx, int64_t cpu, int64_t memory,
):
    """BalancedAllocation for cpu and memory on nodes that all model both: (1 - |f_cpu - f_mem| / 2) × 100,
    each fraction (requested + the pod's) / allocatable in float64, capped at 1."""
    cdef Py_ssize_t j, i, n = idx.shape[0]
    cdef double fc, fm, d
    out = np.empty(n, dtype=np.int64)
    cdef int64_t[::1] s = out
    for j in range(n):
        i = idx[j]
        fc = <double>(req_cpu[i] + cpu) / <double>alloc_cpu[i]
        fm = <double>(req_mem[i] + memory) / <double>alloc_mem[i]
        if fc > 1.0:
            fc = 1.0
        if fm > 1.0:
            fm = 1.0
        d = (fc - fm) / 2
        if d < 0:
            d = -d
        s[j] = <int64_t>((1 - d) * 100)
    return out


def first_max(const int64_t[::1] total):
    """(index of the first highest score, how many nodes share it): the pick needs the tied nodes only
    when there are several."""
    cdef Py_ssize_t i, first = 0, n = total.shape[0]
    cdef Py_ssize_t count = 1
    cdef int64_t best = total[0]
    for i in range(1, n):
        if total[i] > best:
            best, first, count = total[i], i, 1
        elif total[i] == best:
            count += 1
    return first, count


def go_heap_root(const int64_t[::1] total):
    """Go's heap.Init over the scores (Less: strictly higher score), then the root's index: the twin's
    1.37 tie-break (ties.py holds the reference loop)."""
    cdef Py_ssize_t n = total.shape[0]
    cdef Py_ssize_t i0, i, j, t
    h_arr = np.arange(n, dtype=np.intp)
    cdef Py_ssize_t[::1] h = h_arr
    for i0 in range(n // 2 - 1, -1, -1):
        i = i0
        while True:
            j = 2 * i + 1
            if j >= n:
                break
            if j + 1 < n and total[h[j + 1]] > total[h[j]]:
                j += 1
            if not total[h[j]] > total[h[i]]:
                break
            t = h[i]
            h[i] = h[j]
            h[j] = t
            i = j
    return h[0] if n else -1


cdef double _race(Py_ssize_t n, Py_ssize_t size, Py_ssize_t workers, const double[::1] pause,
                  const double[::1] took, double[::1] done, double[::1] begun):
    cdef Py_ssize_t m = pause.shape[0]
    cdef Py_ssize_t i, k, w, best, end
    cdef double t
    free_arr = np.zeros(workers)
    cdef double[::1] free = free_arr
    for k in range(0, m, size):
        best = 0
        for w in range(1, workers):
            if free[w] < free[best]:
                best = w
        t = free[best]
        end = k + size if k + size < m else m
        for i in range(k, end):
            t = t + pause[i]
            begun[i] = t
            t = t + took[i]
            done[i] = t
        free[best] = t
    if m >= n:
        return np.inf
    t = free[0]
    for w in range(1, workers):
        if free[w] < t:
            t = free[w]
    return t


def race_timeline(Py_ssize_t n, Py_ssize_t size, Py_ssize_t workers, const double[::1] pause,
                  const double[::1] took, double[::1] done, double[::1] begun):
    """The parallel Filter workers' timeline over the first pause.shape[0] pieces (whole chunks, or all
    n): each chunk, in order, to the first free worker; on it, a piece begins after its pause and ends
    after its check. Returns when the next chunk begins (inf when none is left). filterorder.py holds
    the reference, with the same additions in the same order."""
    return _race(n, size, workers, pause, took, done, begun)


cdef inline void _sift(const double* key, int64_t* h, Py_ssize_t i, Py_ssize_t size) noexcept nogil:
    """Max-heap on key[h[.]]: move h[i] down."""
    cdef Py_ssize_t j
    cdef int64_t x
    while True:
        j = 2 * i + 1
        if j >= size:
            return
        if j + 1 < size and key[h[j + 1]] > key[h[j]]:
            j += 1
        if not key[h[j]] > key[h[i]]:
            return
        x = h[i]
        h[i] = h[j]
        h[j] = x
        i = j


def race_cut(Py_ssize_t n, Py_ssize_t size, Py_ssize_t workers, const double[::1] pause,
             const double[::1] took, const int64_t[::1] pos, Py_ssize_t want, int64_t[::1] found,
             int64_t[::1] checked):
    """filterorder.cut over the drawn pieces: `found` gets the `want` feasible nodes first done (indices
    into `pos`, in order), `checked` the rejected positions begun before the (want+1)-th one ended
    (ascending); returns how many, or -1 when a chunk not drawn could have begun before it."""
    cdef Py_ssize_t m = pause.shape[0]
    cdef Py_ssize_t f = 0, i, k, r = 0, top = want + 1
    cdef double following, cancel
    done_arr, begun_arr = np.empty(m), np.empty(m)
    cdef double[::1] done = done_arr
    cdef double[::1] begun = begun_arr
    following = _race(n, size, workers, pause, took, done, begun)
    t_arr = np.empty(pos.shape[0])
    cdef double[::1] t = t_arr
    while f < pos.shape[0] and pos[f] < m:
        t[f] = done[pos[f]]
        f += 1
    if f <= want:
        return -1
    heap_arr = np.empty(top, dtype=np.int64)
    cdef int64_t[::1] h = heap_arr
    for i in range(top):
        h[i] = i
    for i in range(top // 2 - 1, -1, -1):
        _sift(&t[0], &h[0], i, top)
    for i in range(top, f):  # the want+1 earliest in the heap, the latest of them at its root
        if t[i] < t[h[0]]:
            h[0] = i
            _sift(&t[0], &h[0], 0, top)
    cancel = t[h[0]]
    if cancel > following:
        return -1
    for k in range(top - 1, 0, -1):  # heap sort: ascending done
        i = h[0]
        h[0] = h[k]
        h[k] = i
        _sift(&t[0], &h[0], 0, k)
    for i in range(want):
        found[i] = h[i]
    k = 0
    for i in range(m):
        if k < f and pos[k] == i:
            k += 1
        elif begun[i] < cancel:
            checked[r] = i
            r += 1
    return r
