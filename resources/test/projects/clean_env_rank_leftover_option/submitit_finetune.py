"""Run main_finetune on a SLURM cluster through submitit."""
import argparse

import submitit

import main_finetune


class Trainer:
    def __init__(self, args):
        self.args = args

    def __call__(self):
        self._setup_gpu_args()
        main_finetune.main(self.args)

    def _setup_gpu_args(self):
        job_env = submitit.JobEnvironment()
        self.args.gpu = job_env.local_rank
        self.args.rank = job_env.global_rank
        self.args.world_size = job_env.num_tasks


def main():
    parser = argparse.ArgumentParser("submitit", parents=[main_finetune.get_args_parser()])
    parser.add_argument("--nodes", default=2, type=int)
    args = parser.parse_args()
    executor = submitit.AutoExecutor(folder="logs")
    executor.update_parameters(nodes=args.nodes, gpus_per_node=8, tasks_per_node=8)
    executor.submit(Trainer(args))


if __name__ == "__main__":
    main()
