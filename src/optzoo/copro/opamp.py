"""Two-stage Miller op-amp sizing: a vectorised square-law model (constrained multi-objective).

Square-law model after Allen & Holberg, *CMOS Analog Circuit Design*, section 6.3. The
constants are textbook-like and INFERRED (the paper's circuit and process are not public):
VDD 1.8 V, K'n 200 uA/V^2, K'p 80 uA/V^2, lambda_n 0.08 /V, lambda_p 0.10 /V, L 0.5 um,
Cox 8.5 fF/um^2; capacitor density 2 fF/um^2 (ours).

Decision ``x`` [n, 7] in physical units: (W/L)1, (W/L)3, (W/L)5, (W/L)6, (W/L)7 in [1, 200],
I5 in [5, 200] uA (amperes), Cc in [0.2, 5] pF (farads). Mirror: I6 = I5 (W/L)7/(W/L)5.

.. math::

    g_{m1}=\\sqrt{2K'_n(W/L)_1 I_5/2},\\ g_{m6}=\\sqrt{2K'_p(W/L)_6 I_6},\\
    g_{m3}=\\sqrt{2K'_p(W/L)_3 I_5/2},\\
    A_0=\\frac{g_{m1}}{(\\lambda_n+\\lambda_p)I_5/2}\\cdot\\frac{g_{m6}}{(\\lambda_n+\\lambda_p)I_6}

:math:`\\omega=g_{m1}/C_c`, :math:`p_2=g_{m6}/C_L`, :math:`z=g_{m6}/C_c`,
:math:`p_3=g_{m3}/(2\\cdot\\tfrac23 W_3LC_{ox})`;
:math:`PM=90^\\circ-\\arctan(\\omega/p_2)-\\arctan(\\omega/z)-\\arctan(\\omega/p_3)`;
:math:`SR=\\min(I_5/C_c, I_6/(C_c+C_L))`; :math:`P=V_{DD}(I_5+I_6)`.

Objectives [n, 3] with senses :data:`SENSES`: gain (dB, max), log10 GBW (Hz, max), power (W, min).
Constraints [n, 7], **feasible iff <= 0**, each relative (dimensionless): PM >= PM_min,
SR >= SR_min, gain >= A_min, area <= area_max, every overdrive in [0.05, 0.4] V (two rows),
output swing VDD - Vov6 - Vov7 >= V_sw.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass

import numpy as np

from optzoo._core.validation import check_array, check_real, fail

__all__ = [
    "BOUNDS",
    "CONSTRAINT_NAMES",
    "OBJECTIVE_NAMES",
    "SENSES",
    "OpAmpSpec",
    "decode_levels",
    "ngspice_available",
    "opamp_evaluate",
    "opamp_metrics",
    "opamp_spice",
]

VDD, KN, KP, LAMN, LAMP, L_UM, COX = 1.8, 200e-6, 80e-6, 0.08, 0.10, 0.5, 8.5e-15
CAP_DENSITY = 2e-15  # F per um^2 (ours)
#: (low, high) of each decision variable, physical units.
BOUNDS = np.array([[1, 200], [1, 200], [1, 200], [1, 200], [1, 200], [5e-6, 200e-6],
                   [0.2e-12, 5e-12]], dtype=float)
OBJECTIVE_NAMES = ("gain_db", "log10_gbw_hz", "power_w")
SENSES = ("max", "max", "min")
CONSTRAINT_NAMES = ("phase_margin", "slew_rate", "gain", "area", "vov_low", "vov_high", "swing")


@dataclass(frozen=True)
class OpAmpSpec:
    """A design specification (a "prompt"): minimum slew rate (V/s), minimum gain (dB), load
    (F), minimum phase margin (degrees), maximum area (um^2), minimum output swing (V)."""

    sr_min: float = 10e6
    gain_min: float = 60.0
    load: float = 2e-12
    pm_min: float = 60.0
    area_max: float = 3000.0
    swing_min: float = 1.0

    def as_array(self) -> np.ndarray:
        return np.array([self.sr_min, self.gain_min, self.load, self.pm_min, self.area_max,
                         self.swing_min], dtype=float)


def _spec_rows(spec, n):
    owner = "opamp_evaluate"
    if isinstance(spec, OpAmpSpec):
        return np.broadcast_to(spec.as_array(), (n, 6))
    s = check_array("spec", spec, owner=owner)
    if s.ndim == 1:
        s = s[None]
    if s.ndim != 2 or s.shape[1] != 6 or s.shape[0] not in (1, n):
        fail("spec", owner, f"an OpAmpSpec or an array of shape (6,), (1, 6) or ({n}, 6)",
             f"shape {s.shape}")
    if (s[:, [0, 2, 4, 5]] <= 0).any():
        fail("spec", owner, "positive in sr_min, load, area_max and swing_min", s.tolist())
    return np.broadcast_to(s, (n, 6))


def opamp_metrics(x, spec=OpAmpSpec()) -> dict:
    """All performance figures of the designs ``x`` [n, 7] (see the module docstring)."""
    x = check_array("x", x, owner="opamp_evaluate")
    if x.ndim != 2 or x.shape[1] != 7:
        fail("x", "opamp_evaluate", "an array of shape (n, 7)", f"shape {x.shape}")
    if (x <= 0).any():
        fail("x", "opamp_evaluate", "positive (W/L ratios, current and capacitance)", "non-positive entries")
    s = _spec_rows(spec, x.shape[0])
    wl1, wl3, wl5, wl6, wl7, i5, cc = x.T
    sr_min, a_min, cl, pm_min, area_max, v_sw = s.T
    i6 = i5 * wl7 / wl5
    gm1 = np.sqrt(2 * KN * wl1 * i5 / 2)
    gm6 = np.sqrt(2 * KP * wl6 * i6)
    gm3 = np.sqrt(2 * KP * wl3 * i5 / 2)
    a1 = gm1 / ((LAMN + LAMP) * i5 / 2)
    a2 = gm6 / ((LAMN + LAMP) * i6)
    a0 = a1 * a2
    w = gm1 / cc
    p2, z = gm6 / cl, gm6 / cc
    w3 = wl3 * L_UM
    p3 = gm3 / (2 * (2 / 3) * w3 * L_UM * COX)
    pm = 90.0 - np.degrees(np.arctan(w / p2) + np.arctan(w / z) + np.arctan(w / p3))
    sr = np.minimum(i5 / cc, i6 / (cc + cl))
    power = VDD * (i5 + i6)
    vov = np.stack([np.sqrt(2 * (i5 / 2) / (KN * wl1)), np.sqrt(2 * (i5 / 2) / (KP * wl3)),
                    np.sqrt(2 * i5 / (KN * wl5)), np.sqrt(2 * i6 / (KP * wl6)),
                    np.sqrt(2 * i6 / (KN * wl7))], 1)
    area = L_UM ** 2 * (2 * wl1 + 2 * wl3 + wl5 + wl6 + wl7) + cc / CAP_DENSITY
    swing = VDD - vov[:, 3] - vov[:, 4]
    gain_db = 20 * np.log10(a0)
    return {"gain_db": gain_db, "gbw_hz": w / (2 * np.pi), "pm_deg": pm, "sr": sr, "power_w": power,
            "area_um2": area, "vov": vov, "swing": swing, "i6": i6, "stage_gains": np.stack([a1, a2], 1),
            "spec": np.asarray(s), "pm_min": pm_min, "sr_min": sr_min, "gain_min": a_min,
            "area_max": area_max, "swing_min": v_sw}


def opamp_evaluate(x, spec=OpAmpSpec()):
    """``(objectives [n, 3], constraints [n, 7])`` of the designs ``x`` [n, 7].

    Objectives: gain (dB), log10 GBW (Hz), power (W), senses :data:`SENSES`. Constraints are
    relative and feasible iff <= 0, in the order :data:`CONSTRAINT_NAMES`. ``spec``: an
    :class:`OpAmpSpec` or rows ``(sr_min, gain_min, load, pm_min, area_max, swing_min)``, one per
    design or one for all.

    >>> F, g = opamp_evaluate([[10, 10, 10, 50, 50, 20e-6, 1e-12]])
    >>> F.shape, g.shape
    ((1, 3), (1, 7))
    """
    m = opamp_metrics(x, spec)
    F = np.stack([m["gain_db"], np.log10(m["gbw_hz"]), m["power_w"]], 1)
    vov = m["vov"]
    g = np.stack([
        1.0 - m["pm_deg"] / m["pm_min"],
        1.0 - m["sr"] / m["sr_min"],
        (m["gain_min"] - m["gain_db"]) / 20.0,
        m["area_um2"] / m["area_max"] - 1.0,
        ((0.05 - vov) / 0.05).max(1),
        ((vov - 0.4) / 0.4).max(1),
        1.0 - m["swing"] / m["swing_min"],
    ], 1)
    return F, g


def decode_levels(levels, n_levels: int = 16):
    """Map integer sizing tokens [n, 7] in ``0..n_levels-1`` to physical designs on a log grid."""
    lv = np.asarray(levels)
    if lv.ndim != 2 or lv.shape[1] != 7:
        fail("levels", "decode_levels", "an integer array of shape (n, 7)", f"shape {lv.shape}")
    if lv.min() < 0 or lv.max() >= n_levels:
        fail("levels", "decode_levels", f"integers in [0, {n_levels - 1}]", f"range [{lv.min()}, {lv.max()}]")
    lo, hi = np.log(BOUNDS[:, 0]), np.log(BOUNDS[:, 1])
    return np.exp(lo + (hi - lo) * lv / (n_levels - 1))


# ---------------------------------------------------------------------------------------------
# optional SPICE backend


def ngspice_available() -> bool:
    """True when the ``ngspice`` binary is on PATH (Debian package ``ngspice``)."""
    return shutil.which("ngspice") is not None


def _netlist(d, spec):
    wl1, wl3, wl5, wl6, wl7, i5, cc = d
    L = L_UM * 1e-6
    return f"""* two-stage Miller op-amp (optzoo.copro); the reference branch has its own supply (vbias) so
* i(vdd) is I5 + I6 as in the analytic power; DC unity feedback through a 1 GH inductor (open
* at AC) sets the operating point, the inverting input's AC drive comes through a 1 GF cap
.model nch nmos level=1 kp={KN} vto=0.5 lambda={LAMN}
.model pch pmos level=1 kp={KP} vto=-0.5 lambda={LAMP}
vdd vdd 0 {VDD}
vbias vb 0 {VDD}
vcm inp 0 dc 0.9 ac 0.5
vacn acn 0 dc 0 ac -0.5
lfb out inn 1e9
cac acn inn 1e9
ib vb nb {i5}
m8 nb nb 0 0 nch w={wl5 * L} l={L}
m5 tail nb 0 0 nch w={wl5 * L} l={L}
m1 n1 inn tail 0 nch w={wl1 * L} l={L}
m2 n2 inp tail 0 nch w={wl1 * L} l={L}
m3 n1 n1 vdd vdd pch w={wl3 * L} l={L}
m4 n2 n1 vdd vdd pch w={wl3 * L} l={L}
m6 out n2 vdd vdd pch w={wl6 * L} l={L}
m7 out nb 0 0 nch w={wl7 * L} l={L}
cc n2 out {cc}
cl out 0 {spec.load}
.control
op
print i(vdd)
ac dec 40 1 10g
meas ac gain_db find vdb(out) at=1
meas ac ugbw when vdb(out)=0
meas ac phase find vp(out) when vdb(out)=0
.endc
.end
"""


def opamp_spice(x, spec=OpAmpSpec(), *, timeout: float = 30.0) -> dict:
    """Gain (dB), UGBW (Hz), phase at UGBW (degrees) and power (W) of each design from
    ``ngspice -b`` (level-1 models with this module's constants). Raises ``RuntimeError`` when
    ngspice is not installed. Slow (tens of ms per design): a validation backend, not a default.
    """
    import re
    import subprocess
    import tempfile

    if not ngspice_available():
        raise RuntimeError("opamp_spice needs the ngspice binary (Debian: apt-get install ngspice)")
    timeout = check_real("timeout", timeout, owner="opamp_spice", low=0.0, closed="neither")
    x = check_array("x", x, owner="opamp_spice")
    if x.ndim != 2 or x.shape[1] != 7:
        fail("x", "opamp_spice", "an array of shape (n, 7)", f"shape {x.shape}")
    out = {"gain_db": [], "ugbw_hz": [], "phase_deg": [], "power_w": []}
    num = r"([-+0-9.eE]+)"
    for d in x:
        with tempfile.NamedTemporaryFile("w", suffix=".cir", delete=False) as fh:
            fh.write(_netlist(d, spec))
            path = fh.name
        res = subprocess.run(["ngspice", "-b", path], capture_output=True, text=True, timeout=timeout)
        txt = res.stdout

        def grab(pat, text=txt):
            mm = re.search(pat, text, flags=re.IGNORECASE)
            return float(mm.group(1)) if mm else float("nan")

        out["gain_db"].append(grab(r"gain_db\s*=\s*" + num))
        out["ugbw_hz"].append(grab(r"ugbw\s*=\s*" + num))
        ph = grab(r"phase\s*=\s*" + num)
        out["phase_deg"].append(float(np.degrees(ph)) if abs(ph) < 7 else ph)
        out["power_w"].append(abs(grab(r"i\(vdd\)\s*=\s*" + num)) * VDD)
    return {k: np.asarray(v) for k, v in out.items()}
