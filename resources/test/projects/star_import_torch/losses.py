"""Loss settings shared by the scripts, written against `from model import *` alone."""
from model import *

summed_loss = nn.CrossEntropyLoss(size_average=False)  # expect: loss-size-average-reduce
