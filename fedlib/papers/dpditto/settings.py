"""Every setting of the DP-Ditto reproduction, and where it comes from.

The surviving text of the paper lost its equations and most of its numbers: it says
what it sets ("We set N clients by default", "The learning rates of FL and PL are ...")
without the values. Each setting below is either given by the text (with the section
that gives it) or inferred (with the reason for the value chosen). The values are read
from the tier's setup and the baselines' configs, so the table shows what was run.
"""

from __future__ import annotations

import math

import pandas as pd

from fedlib.papers.dpditto.baselines import AppleConfig, FedAlaConfig, FedAmpConfig, PFedMeConfig
from fedlib.papers.dpditto.experiment import DELTA, DittoSetup

PAPER = "paper"
INFERRED = "inferred"


def _grid(values) -> str:
    return "{" + ", ".join("inf" if math.isinf(v) else f"{v:g}" for v in values) + "}"


def settings_table(setup: DittoSetup) -> pd.DataFrame:
    """One row per setting: its value in ``setup`` (the tier the chapter runs), whether
    the paper's text gives it or it is inferred, and the source or the reason."""
    amp, pfedme, apple, ala = FedAmpConfig(), PFedMeConfig(), AppleConfig(), FedAlaConfig()
    rows = [
        ("number of clients N", setup.n_clients, INFERRED,
         "Section VI says \"we set N clients by default\"; the number is lost. 20 is the "
         "default of PFLlib, whose models and datasets the paper's match"),
        ("participation", "every client, every round (q = 1)", PAPER,
         "Section III (the DP mechanism): \"all clients train and upload their local "
         "models at each communication round\""),
        ("privacy delta", DELTA, INFERRED,
         "Section VI gives the privacy budget with a citation of NbAFL [9]; the values are "
         "lost. 0.01 is the value of the specification this reproduction follows, a common "
         "choice with no source in the text"),
        ("clipping threshold C", setup.clip, INFERRED,
         "Section VI: \"the clipping threshold is ...\", the value lost; 10 is a choice "
         "of this reproduction with no source (a parameter of the chapter)"),
        ("sensitivity Delta S", "2C/|D_i|", INFERRED,
         "Section III, eq. (7) is lost; the text says it depends only on the dataset size "
         "and C, and cites NbAFL [9], whose sensitivity of a clipped model is 2C/|D_i|"),
        ("noise std sigma", "Delta S sqrt(2 q T ln(1/delta)) / eps", INFERRED,
         "Section III, eq. (8) is lost; the text names T, the sampling ratio q and [9]: "
         "this is NbAFL's calibration (a note of the chapter shows the alternative reading)"),
        ("privacy budgets eps", _grid(setup.epsilons), INFERRED,
         "Section VI-B names eps = inf (Ditto) beside finite budgets, which are lost; powers "
         "of ten from 1 to 100 span a strong to a weak guarantee"),
        ("eps of Figures 3 and 4", _grid(setup.compare_epsilons), INFERRED,
         "Section VI-A: \"Figs. 3 and 4 ... where eps = ... and ...\", both lost; the "
         "chapter also reads the comparison at eps = 1 (its own section)"),
        ("eps of Figures 6 and 7", f"{setup.fig6_epsilon:g}", INFERRED,
         "Section VI-C, lost; the chapter also reads Figure 6 at eps = 1"),
        ("lambda grid", _grid(setup.lambdas), INFERRED,
         "Section VI-C lists the lambdas (lost) \"as well as two special cases\": lambda = 0 "
         "(local training only) and lambda = 1 (FL with no personalization) are the paper's; "
         "the values between are inferred"),
        ("small lambda of Figure 5", f"{setup.fig5_lambda:g}", INFERRED,
         "Section VI-B, lost; a small value of the grid (the text says \"small lambda\")"),
        ("rounds T", _grid(setup.rounds), INFERRED,
         "lost; the text searches T up to a maximum T_max (Section V-C), also lost; the "
         "grid is a choice of this reproduction"),
        ("local learning rate eta_l, personal eta_p", f"{setup.lr:g}, {setup.lr:g}", INFERRED,
         "Section VI: \"the learning rates of FL and PL are ... and ...\", both lost; 0.005 "
         "is PFLlib's default"),
        ("local and personal steps per round E, E_p", setup.local_steps, INFERRED,
         "not in the text; one local epoch (PFLlib's default): about 263 steps of batch 10 "
         "on a client's MNIST data at the paper tier, E_p = E"),
        ("batch size", setup.batch_size, INFERRED, "not in the text; PFLlib's default"),
        ("partition", "2 label shards per client", INFERRED,
         "not in the text (it speaks of heterogeneous local data); PFLlib's pathological "
         "non-IID split"),
        ("train/test split per client", "75% / 25%", INFERRED,
         "not in the text; PFLlib's default"),
        ("models", "MLR; DNN 784-100-10 ReLU; CNN conv32-pool-conv64-pool-FC-FC", PAPER,
         "Section VI lists the three; the CNN's 5x5 kernels and FC width 512 are inferred "
         "(PFLlib's CNN)"),
        ("datasets and loss", "MNIST, Fashion-MNIST, CIFAR-10; cross-entropy", PAPER,
         "Section VI, its opening list of models and datasets"),
        ("fairness", "variance of the personal training losses (figures: their std)", PAPER,
         "Definition 1 (Section V) and Section VI-C (\"measured by the standard deviation\")"),
        ("personal model at lambda = 1", "the global model itself", INFERRED,
         "Section VI-C calls lambda = 1 \"FL with no personalization\"; the personal update "
         "would only approach the global model"),
        ("baselines' privacy", "clip and add DP-Ditto's Gaussian noise to every upload",
         INFERRED, "Section VI-A: DP noise perturbs the benchmarks' local models; that it is "
         "DP-Ditto's noise (same eps, delta, C, T) is inferred from \"for fair comparisons\", "
         "and tested (its own section)"),
        ("FedAMP alpha_k, lambda, sigma", f"{amp.alpha_k:g}, {amp.lam:g}, {amp.sigma:g}",
         INFERRED, "not in the text; the defaults fedlib's FedAmpConfig documents"),
        ("pFedMe lambda, K, personal lr, beta",
         f"{pfedme.lam:g}, {setup.pfedme_inner}, {pfedme.personal_lr:g}, {pfedme.beta:g}",
         INFERRED, "not in the text; the pFedMe paper's MNIST setting"),
        ("APPLE p learning rate, mu, decay length",
         f"{apple.p_lr:g}, {apple.mu:g}, {apple.decay_fraction:g} T", INFERRED,
         "not in the text; the APPLE paper's defaults"),
        ("FedALA eta, layers adapted, ALA steps (first round)",
         f"{ala.eta:g}, {ala.layers}, {setup.ala_steps} ({4 * setup.ala_steps})", INFERRED,
         "not in the text; the FedALA paper's defaults"),
    ]
    return pd.DataFrame(rows, columns=["setting", "value", "from", "where it comes from"]) \
        .astype({"value": str})
