# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False, cdivision=True
"""FairBottleneck::do_solve (SimGrid 3.32) in one compiled pass over every enabled element.

lmm.System._solve is the reference and the fallback; this is the same IEEE arithmetic in the same order
per constraint (built with -ffp-contract=off, so no fused multiply-add), over the components of the
constraints touched since the last solve, found by walking the rows here (as System.solve walks objects).
Rows are in enable order (each constraint's enabled list, oldest first); a dead row has variable -1.
"""

from libc.stdlib cimport free, malloc

cdef double DBL_MAX = 1.7976931348623157e308


def fair_bottleneck(
    const int[::1] e_c, const int[::1] e_v, const double[::1] e_w, Py_ssize_t ne,
    const double[::1] c_bound, const unsigned char[::1] c_fat, unsigned char[::1] c_dirty, Py_ssize_t nc,
    const double[::1] v_bound, const int[::1] v_start, const int[::1] v_cnt, Py_ssize_t nv,
    double[::1] value, double[::1] mu, double precision, int[::1] solved,
):
    """Values and last increments (value, mu) of the variables in the components of the dirty constraints
    (the others keep theirs); clears c_dirty. Returns how many variables it solved, their slots in
    `solved`."""
    cdef int *buf = <int *>malloc((3 * nc + 2 * nv + 2 * ne + 2) * sizeof(int))
    cdef double *dbuf = <double *>malloc((2 * nc + nv + 1) * sizeof(double))
    cdef unsigned char *flags = <unsigned char *>malloc(3 * nc + 2 * nv + 1)
    if buf == NULL or dbuf == NULL or flags == NULL:
        free(buf)
        free(dbuf)
        free(flags)
        raise MemoryError()
    cdef int *first = buf  # per constraint: its rows in `by_c` (nc + 1)
    cdef int *by_c = buf + nc + 1  # rows grouped by constraint (ne)
    cdef int *cl = by_c + ne  # the component's constraints (nc)
    cdef int *vl = cl + nc  # the component's variables (nv)
    cdef int *rows = vl + nv  # the component's rows, in enable order (ne)
    cdef int *nb = rows + ne  # per constraint (nc)
    cdef double *rem = dbuf
    cdef double *usage = dbuf + nc
    cdef double *inc = dbuf + 2 * nc
    cdef unsigned char *c_in = flags
    cdef unsigned char *c_act = flags + nc
    cdef unsigned char *full = flags + 2 * nc
    cdef unsigned char *v_in = flags + 3 * nc
    cdef unsigned char *linked = flags + 3 * nc + nv
    cdef Py_ssize_t i, j, k, c, c2, v, ncl = 0, nvl = 0, nrows = 0, top, nsat = 0
    cdef double x, r, b
    cdef int n
    try:
        # constraint -> rows (counting sort), then the components of the dirty constraints
        for c in range(nc + 1):
            first[c] = 0
        for i in range(ne):
            if e_v[i] >= 0:
                first[e_c[i] + 1] += 1
        for c in range(nc):
            first[c + 1] += first[c]
            nb[c] = first[c]
            c_in[c] = 0
        for i in range(ne):
            if e_v[i] >= 0:
                by_c[nb[e_c[i]]] = i
                nb[e_c[i]] += 1
        for v in range(nv):
            v_in[v] = 0
        for c in range(nc):
            if c_dirty[c] and not c_in[c]:
                c_in[c] = 1
                cl[ncl] = c
                ncl += 1
            c_dirty[c] = 0
        top = 0
        while top < ncl:  # cl doubles as the walk's queue
            c = cl[top]
            top += 1
            for j in range(first[c], first[c + 1]):
                v = e_v[by_c[j]]
                if v_in[v]:
                    continue
                v_in[v] = 1
                vl[nvl] = v
                nvl += 1
                for k in range(v_start[v], v_start[v] + v_cnt[v]):
                    c2 = e_c[k]
                    if not c_in[c2]:
                        c_in[c2] = 1
                        cl[ncl] = c2
                        ncl += 1
        for i in range(ne):
            v = e_v[i]
            if v >= 0 and v_in[v]:
                rows[nrows] = i
                nrows += 1
        # FairBottleneck::do_solve over them
        for j in range(nvl):
            v = vl[j]
            value[v] = 0.0
            linked[v] = 1
        nsat = nvl
        for j in range(ncl):
            c = cl[j]
            rem[c] = c_bound[c]
            usage[c] = 0.0
            c_act[c] = 1
        while nsat > 0:
            for j in range(ncl):
                nb[cl[j]] = 0
            for j in range(nrows):
                i = rows[j]
                if linked[e_v[i]]:
                    nb[e_c[i]] += 1
            for j in range(ncl):
                c = cl[j]
                if not c_act[c]:
                    continue
                n = nb[c]
                if n and c_fat[c]:
                    n = 1
                if n == 0:
                    rem[c] = 0.0
                    usage[c] = 0.0
                    c_act[c] = 0
                else:
                    usage[c] = rem[c] / <double>n
            for j in range(nvl):
                inc[vl[j]] = DBL_MAX
            for j in range(nrows):
                i = rows[j]
                v = e_v[i]
                if linked[v]:
                    x = usage[e_c[i]] / e_w[i]
                    if x < inc[v]:
                        inc[v] = x
            for j in range(nvl):
                v = vl[j]
                if linked[v]:
                    b = v_bound[v]
                    if b > 0:
                        x = b - value[v]
                        if x < inc[v]:
                            inc[v] = x
                    mu[v] = inc[v]
                    value[v] += inc[v]
                    if value[v] == b:
                        linked[v] = 0
            # each constraint's remaining capacity, its elements newest first (FATPIPE: the smallest take)
            for j in range(nrows - 1, -1, -1):
                i = rows[j]
                c = e_c[i]
                if not c_act[c]:
                    continue
                x = e_w[i] * mu[e_v[i]]
                if c_fat[c]:
                    if x < usage[c]:
                        usage[c] = x
                else:
                    r = rem[c] - x
                    if r < precision:
                        r = 0.0
                    rem[c] = r
            for j in range(ncl):
                c = cl[j]
                full[c] = 0
                if c_act[c]:
                    if c_fat[c]:
                        r = rem[c] - usage[c]
                        if r < precision:
                            r = 0.0
                        rem[c] = r
                    if rem[c] <= 0.0:
                        c_act[c] = 0
                        full[c] = 1
            for j in range(nrows):
                i = rows[j]
                if full[e_c[i]]:
                    linked[e_v[i]] = 0
            nsat = 0
            for j in range(nvl):
                nsat += linked[vl[j]]
        for j in range(nvl):
            solved[j] = vl[j]
    finally:
        free(buf)
        free(dbuf)
        free(flags)
    return nvl
