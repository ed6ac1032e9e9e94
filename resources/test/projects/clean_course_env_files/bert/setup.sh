#!/usr/bin/env bash
conda create -n bert_hw python=3.8
conda activate bert_hw

conda install pytorch==1.12.1 torchvision torchaudio \
    cudatoolkit=11.6 -c pytorch -c conda-forge
pip install tqdm==4.58.0
pip install requests==2.25.1
