#!/bin/bash
torchrun --nproc_per_node=8 main_finetune.py --data_path /datasets/imagenet --epochs 10
