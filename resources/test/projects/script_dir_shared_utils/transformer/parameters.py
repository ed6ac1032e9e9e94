import torch
import torch.nn as nn
import torch.nn.functional as F

NUM_LAYERS = 6
NUM_HEADS = 8
EMBED_SIZE = 512
DROPOUT = 0.1
LEARNING_RATE = 2e-4
BATCH_SIZE = 64
SAVE_EVERY = 10

PAD_IDX = 0
CUDA = torch.cuda.is_available()
torch.manual_seed(0)
