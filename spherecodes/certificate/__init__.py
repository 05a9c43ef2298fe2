"""Certified one-vs-rest distances of a code (Jiang et al. 2024, Def. 2.1, Lemma C.4/C.6).

The distances, their bounds and how they are proved: :mod:`._driver`.  This
package's face; the work is done in its modules:

* :mod:`._driver`: :func:`one_vs_rest_distances` (the nearest-shell pass, the
  Gram pass, then the QP) and :func:`carried_certificate` (through a rotation);
* :mod:`._orbits`: codes with a proved symmetry (one orbit of sign changes,
  the first K words of an orbit of sign changes or of Z4 translations),
  certified from class 0;
* :mod:`._solve`, :mod:`._distributed`: the QP's blocks of classes, on this
  machine's threads or as tasks on a Dask cluster;
* :mod:`._estimate`: :func:`certificate_estimate`, memory and time measured
  on a sample before a certificate runs;
* :mod:`.witness`: :func:`verify_witness`, a stored certificate checked from
  its witness; :mod:`._result`: what a certificate holds;
* :mod:`._budget`: the tolerance, memory and threads a certificate may use.
"""

from ._blocks import host_memory
from ._budget import DEFAULT_TOL, SHELL_BLOCK_BYTES, SHELL_SUPPORT_BYTES
from ._driver import carried_certificate, check_dask_device, one_vs_rest_distances
from ._estimate import QP_TIMING_REPEAT_BELOW, QP_TIMING_SECONDS, SHELL_SAMPLE, SHELL_TIMING_SECONDS, certificate_estimate
from ._orbits import orbit_words_bytes
from ._result import CertificateOutOfTime, CertificateProgress, OneVsRestCertificate
from ._solve import MAX_QP_WORKERS, qp_workers
from .witness import WITNESS_SLACK, prefix_bounds, support_residuals, verify_witness

__all__ = [
    "DEFAULT_TOL", "MAX_QP_WORKERS", "QP_TIMING_REPEAT_BELOW", "QP_TIMING_SECONDS", "SHELL_BLOCK_BYTES",
    "SHELL_SAMPLE", "SHELL_SUPPORT_BYTES", "SHELL_TIMING_SECONDS", "WITNESS_SLACK", "CertificateOutOfTime",
    "CertificateProgress", "OneVsRestCertificate", "carried_certificate", "certificate_estimate", "check_dask_device",
    "host_memory", "one_vs_rest_distances", "orbit_words_bytes", "prefix_bounds", "qp_workers", "support_residuals",
    "verify_witness",
]
