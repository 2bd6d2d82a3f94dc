"""Differential privacy: exact accountants and the papers' noise calibration formulas.

:mod:`fedlib.privacy.accounting` gives the epsilon of the (Poisson-subsampled)
Gaussian mechanism under Google ``dp_accounting`` (RDP and PLD) and Opacus (RDP,
a cross-check), and calibrates noise to a budget. :mod:`fedlib.privacy.calibration`
holds the closed-form noise formulas exactly as each reproduced paper states them.
:mod:`fedlib.privacy.gaussian` gives the exact epsilon of a Gaussian mechanism composed
without subsampling (what PLD converges to there, in closed form).
"""

from fedlib.privacy.accounting import (
    ACCOUNTANTS,
    PLD_ABSOLUTE_ACCURACY,
    PLD_RELATIVE_ACCURACY,
    epsilon,
    epsilon_curve,
    noise_multiplier_for_epsilon,
    rdp_to_epsilon,
)
from fedlib.privacy.calibration import (
    classic_gaussian_c,
    classic_gaussian_sigma,
    classic_gaussian_valid,
    dpditto_sensitivity,
    dpditto_sigma,
    dpditto_sigma_alternative,
    hu2020_sensitivities,
    hu2020_sigma,
    padpfl_client_sigma,
    padpfl_server_noise_threshold,
    padpfl_server_sigma,
)

__all__ = [
    "ACCOUNTANTS",
    "PLD_ABSOLUTE_ACCURACY",
    "PLD_RELATIVE_ACCURACY",
    "classic_gaussian_c",
    "classic_gaussian_sigma",
    "classic_gaussian_valid",
    "dpditto_sensitivity",
    "dpditto_sigma",
    "dpditto_sigma_alternative",
    "epsilon",
    "epsilon_curve",
    "hu2020_sensitivities",
    "hu2020_sigma",
    "noise_multiplier_for_epsilon",
    "padpfl_client_sigma",
    "padpfl_server_noise_threshold",
    "padpfl_server_sigma",
    "rdp_to_epsilon",
]
