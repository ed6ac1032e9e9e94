import torch
import torch.nn as nn
import torch.nn.functional as F

RNN_TYPE = "GRU"
NUM_LAYERS = 2
HIDDEN_SIZE = 1000
DROPOUT = 0.5
LEARNING_RATE = 2e-4
BATCH_SIZE = 64
SAVE_EVERY = 10

PAD_IDX = 0
CUDA = torch.cuda.is_available()
torch.manual_seed(0)
