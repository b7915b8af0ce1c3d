"""`hydra/launcher=stacked_slurm` and `stacked_submitit_local`: the stacked launcher's stacks sent as submitit jobs
(adrop.train.sweep.cluster), with the options of Hydra's submitit launcher (partition, gpus_per_node, timeout_min,
mem_gb, ...) and `max_stack`.

They need Hydra's submitit launcher (pip install -e ".[launchers]"); without it nothing here is defined (Hydra's
plugin scan imports this module anyway, and warns about one that fails to import).
"""

from dataclasses import dataclass
from typing import Any, Optional, Sequence

from hydra.core.config_store import ConfigStore
from hydra.core.utils import JobReturn
from omegaconf import OmegaConf

from .stacked_launcher import compose, job_returns

try:
    from hydra_plugins.hydra_submitit_launcher.config import BaseQueueConf, LocalQueueConf, SlurmQueueConf
    from hydra_plugins.hydra_submitit_launcher.submitit_launcher import BaseSubmititLauncher
except ImportError:
    BaseSubmititLauncher = None

FOLDER = "${hydra.sweep.dir}/.submitit"  # submitit's pickles and logs (<job id>_0_log.out), no %j folder

if BaseSubmititLauncher is not None:

    @dataclass
    class SlurmConf(SlurmQueueConf):
        """A SLURM launcher for sweeps, one job per configuration, through Hydra's submitit plugin, with adrop's
        defaults; hydra/launcher=stacked_slurm sends stacks instead (docs/cluster.md),
        adrop train -m hydra/launcher=slurm hydra.launcher.partition=gpu method=logsum,adaprox lam=1e-4,1e-3. Each job
        gets its own folder and checkpoint: a timed-out or preempted job is requeued (at most max_num_timeout times
        for timeouts) and its run resumes from its last checkpoint."""

        submitit_folder: str = FOLDER  # submitit's pickles and each job's log, <job id>_0_log.out
        timeout_min: int = 240
        nodes: int = 1
        tasks_per_node: int = 1
        cpus_per_task: Optional[int] = 4
        gpus_per_node: Optional[int] = 1
        mem_gb: Optional[int] = 16
        max_num_timeout: int = 3  # a timed-out job is requeued and resumes from its checkpoints, up to 3 times

    @dataclass
    class StackedLocalConf(LocalQueueConf):
        """The stacked launcher's stacks as submitit's local jobs (a job per stack, on this machine)."""

        _target_: str = "hydra_plugins.adrop_plugins.stacked_submitit.StackedLocalLauncher"
        submitit_folder: str = FOLDER
        max_stack: Optional[int] = None  # null: the measured default for where the jobs train (stacked_jobs)
        timeout_min: int = 1440  # a local job's time limit (submitit's local executor: a timeout, then a requeue)

    @dataclass
    class StackedSlurmConf(SlurmConf):
        """hydra/launcher=slurm's settings, for stacks: each SLURM job trains a stack of configurations."""

        _target_: str = "hydra_plugins.adrop_plugins.stacked_submitit.StackedSlurmLauncher"
        max_stack: Optional[int] = None

    STORE = ConfigStore.instance()
    STORE.store(group="hydra/launcher", name="slurm", node=SlurmConf, provider="adrop")
    STORE.store(group="hydra/launcher", name="stacked_submitit_local", node=StackedLocalConf, provider="adrop")
    STORE.store(group="hydra/launcher", name="stacked_slurm", node=StackedSlurmConf, provider="adrop")
    # Hydra's submitit_local with its logs in .submitit/ (its default, .submitit/%j, leaves a folder literally named
    # %j: submitit's local executor does not fill in the job id there)
    STORE.store(
        group="hydra/launcher",
        name="submitit_local",
        node=LocalQueueConf(submitit_folder=FOLDER),
        provider="submitit_launcher",
    )

    class StackedSubmititLauncher(BaseSubmititLauncher):
        def __init__(self, max_stack: Optional[int] = None, **params: Any) -> None:
            if max_stack is not None and max_stack < 1:
                raise ValueError(
                    f"hydra.launcher.max_stack must be a positive integer or null (the default), got {max_stack}"
                )
            super().__init__(**params)
            self.max_stack = max_stack

        def device(self, cfg) -> Optional[str]:
            """Where the jobs train, for the default stack size (None: this machine's device)."""
            return None

        def executor(self):
            """submitit's executor with the launcher's parameters, made as Hydra's submitit launcher makes it."""
            import submitit

            params, specific = self.params, {"max_num_timeout"}
            executor = submitit.AutoExecutor(
                cluster=self._EXECUTOR,
                folder=params["submitit_folder"],
                **{f"{self._EXECUTOR}_{k}": v for k, v in params.items() if k in specific},
            )
            base = set(OmegaConf.structured(BaseQueueConf).keys())
            executor.update_parameters(
                **{
                    k if k in base else f"{self._EXECUTOR}_{k}": v
                    for k, v in params.items()
                    if k not in specific | {"submitit_folder"}
                }
            )
            return executor

        def launch(self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> Sequence[JobReturn]:
            from adrop.train.sweep import cluster  # torch: only when jobs are sent (Hydra's scan imports this module)

            executor = self.executor()  # first: where it cannot start (no srun), no job folder is made
            jobs = compose(self.config, self.hydra_context, job_overrides, initial_job_idx)
            train = cluster.TrainStack(
                OmegaConf.to_container(self.config.hydra.hydra_logging, resolve=True),
                self.config.hydra.verbose,
                self.params.get("cpus_per_task"),
            )
            device = self.device(jobs[0].cfg) if jobs else None
            return job_returns(
                jobs,
                cluster.submit(
                    executor, self._EXECUTOR, jobs, self.max_stack, device, train, self.params["submitit_folder"]
                ),
            )

    class StackedLocalLauncher(StackedSubmititLauncher):
        _EXECUTOR = "local"

    class StackedSlurmLauncher(StackedSubmititLauncher):
        _EXECUTOR = "slurm"

        def device(self, cfg) -> Optional[str]:
            from adrop.train.sweep import cluster

            return cluster.slurm_device(cfg.device, self.params)
