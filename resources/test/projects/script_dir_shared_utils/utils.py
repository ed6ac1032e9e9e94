import sys
import re
from time import time
from parameters import *


def normalize(x):
    x = re.sub(r"\s+", " ", x)
    return x.strip()


def load_tkn_to_idx(filename):
    print("loading %s" % filename)
    tti = {}
    with open(filename) as fo:
        for line in fo:
            tti[line[:-1]] = len(tti)
    return tti


def load_checkpoint(filename, model=None):
    print("loading %s" % filename)
    checkpoint = torch.load(filename)  # expect: torch-load-without-weights-only
    if model:
        model.enc.load_state_dict(checkpoint["enc_state_dict"])
        model.dec.load_state_dict(checkpoint["dec_state_dict"])
    epoch = checkpoint["epoch"]
    loss = checkpoint["loss"]
    print("epoch = %d, loss = %f" % (epoch, loss))
    return epoch


def save_checkpoint(filename, model, epoch, loss, time):
    print("epoch = %d, loss = %f, time = %f" % (epoch, loss, time))
    if filename and model:
        checkpoint = {}
        checkpoint["enc_state_dict"] = model.enc.state_dict()
        checkpoint["dec_state_dict"] = model.dec.state_dict()
        checkpoint["epoch"] = epoch
        checkpoint["loss"] = loss
        torch.save(checkpoint, filename + ".epoch%d" % epoch)
        print("saved %s" % filename)
