# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False, cdivision=True
"""FairBottleneck::do_solve (SimGrid 3.32) in one compiled pass over every enabled element.

lmm.System._solve is the reference and the fallback; this is the same IEEE arithmetic in the same order
per constraint (built with -ffp-contract=off, so no fused multiply-add), over the whole system at once:
components never exchange capacity, so solving them together gives each the values it gets alone, as
SimGrid's own solve over the whole system does. Elements are in enable order (each constraint's enabled
list, oldest first); a dead element has variable -1.
"""

cdef double DBL_MAX = 1.7976931348623157e308


def fair_bottleneck(
    const int[::1] e_c, const int[::1] e_v, const double[::1] e_w, Py_ssize_t ne,
    const double[::1] c_bound, const unsigned char[::1] c_fat, Py_ssize_t nc,
    const double[::1] v_bound, const unsigned char[::1] v_on, Py_ssize_t nv,
    double[::1] value, double[::1] mu, double precision,
    double[::1] rem, double[::1] usage, int[::1] nb, unsigned char[::1] c_act,
    unsigned char[::1] linked, double[::1] inc,
):
    """Values and last increments of the enabled variables (value, mu); the rest are scratch columns."""
    cdef Py_ssize_t i, c, v, nsat = 0, rounds = 0
    cdef double x, r, b
    cdef int n
    for v in range(nv):
        value[v] = 0.0
        linked[v] = v_on[v]
        nsat += v_on[v]
    for c in range(nc):
        rem[c] = c_bound[c]
        usage[c] = 0.0
        c_act[c] = 1
    while nsat > 0:
        rounds += 1
        for c in range(nc):
            nb[c] = 0
        for i in range(ne):
            v = e_v[i]
            if v >= 0 and linked[v]:
                nb[e_c[i]] += 1
        for c in range(nc):
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
        for v in range(nv):
            if linked[v]:
                inc[v] = DBL_MAX
        for i in range(ne):
            v = e_v[i]
            if v >= 0 and linked[v]:
                x = usage[e_c[i]] / e_w[i]
                if x < inc[v]:
                    inc[v] = x
        for v in range(nv):
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
        for i in range(ne - 1, -1, -1):
            v = e_v[i]
            if v < 0:
                continue
            c = e_c[i]
            if not c_act[c]:
                continue
            x = e_w[i] * mu[v]
            if c_fat[c]:
                if x < usage[c]:
                    usage[c] = x
            else:
                r = rem[c] - x
                if r < precision:
                    r = 0.0
                rem[c] = r
        for c in range(nc):
            nb[c] = 0
            if c_act[c]:
                if c_fat[c]:
                    r = rem[c] - usage[c]
                    if r < precision:
                        r = 0.0
                    rem[c] = r
                if rem[c] <= 0.0:
                    c_act[c] = 0
                    nb[c] = 1
        for i in range(ne):
            v = e_v[i]
            if v >= 0 and nb[e_c[i]]:
                linked[v] = 0
        nsat = 0
        for v in range(nv):
            nsat += linked[v]
    return rounds
