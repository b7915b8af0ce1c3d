"""How far apart a full round's two lams should lie: the chance that one of two runs lands within tolerance.

    python scripts/studies/lam_window_overlap.py [--tolerance 0.05] [--samples 200000]

A model of lam_search's last round, in log nonzero: the guess errs by e ~ N(0, guess_error); the runs sit at +-d
around it (d = 0.05 is two tolerance windows side by side, each run a half window from the guess; 0.025 overlaps them
by half), and each lands off its expected value by the curve's roughness, N(0, roughness), independently. Prints, per
(roughness, guess error), the probability that at least one run lands within tolerance, for several d.
"""

import argparse

import numpy as np


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tolerance", type=float, default=0.05)
    parser.add_argument("--samples", type=int, default=200_000)
    args = parser.parse_args()
    rng, t, n = np.random.default_rng(0), args.tolerance, args.samples
    offsets = (0.0125, 0.025, 0.0375, 0.05, 0.075)
    print("roughness  guess error  " + "  ".join(f"d={d:<6g}" for d in offsets))
    for roughness in (0.02, 0.03):
        for guess_error in (0.02, 0.04, 0.07, 0.1):
            e = rng.normal(0, guess_error, n)
            hits = [
                (
                    (np.abs(e + d + rng.normal(0, roughness, n)) < t)
                    | (np.abs(e - d + rng.normal(0, roughness, n)) < t)
                ).mean()
                for d in offsets
            ]
            print(f"{roughness:<9g}  {guess_error:<11g}  " + "  ".join(f"{h:<8.2f}" for h in hits))


if __name__ == "__main__":
    main()
