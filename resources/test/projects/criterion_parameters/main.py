import argparse
import math

import torch
import torch.nn as nn

from models import LSTNet


def evaluate(data, X, Y, model, evaluateL2, evaluateL1, batch_size):
    model.eval()
    total_loss = 0
    total_loss_l1 = 0
    n_samples = 0
    with torch.no_grad():
        for start in range(0, len(X), batch_size):
            inputs, targets = X[start:start + batch_size], Y[start:start + batch_size]
            output = model(inputs)
            scale = data.scale.expand(output.size(0), data.m)
            total_loss += evaluateL2(output * scale, targets * scale).data[0]  # expect: tensor-data-zero-index
            total_loss_l1 += evaluateL1(output * scale, targets * scale).data[0]  # expect: tensor-data-zero-index
            n_samples += output.size(0) * data.m
    rse = math.sqrt(total_loss / n_samples) / data.rse
    rae = (total_loss_l1 / n_samples) / data.rae
    return rse, rae


def train(data, X, Y, model, criterion, optim, batch_size):
    model.train()
    total_loss = 0
    n_samples = 0
    for start in range(0, len(X), batch_size):
        inputs, targets = X[start:start + batch_size], Y[start:start + batch_size]
        model.zero_grad()
        output = model(inputs)
        scale = data.scale.expand(output.size(0), data.m)
        loss = criterion(output * scale, targets * scale)
        loss.backward()
        optim.step()
        total_loss += loss.data[0]  # expect: tensor-data-zero-index
        n_samples += output.size(0) * data.m
    return total_loss / n_samples


def worst_errors(model, X, Y, errors_of):
    with torch.no_grad():
        errors = errors_of(model(X), Y)
    return errors.data[0]  # ok: one call site passes a per-element loss, whose first row this is


parser = argparse.ArgumentParser()
parser.add_argument("--L1Loss", type=bool, default=True)
parser.add_argument("--epochs", type=int, default=100)
parser.add_argument("--batch_size", type=int, default=128)
args = parser.parse_args()

Data = torch.load("data.pt", weights_only=True)
model = LSTNet(Data.m)

if args.L1Loss:
    criterion = nn.L1Loss(size_average=False)  # expect: loss-size-average-reduce
else:
    criterion = nn.MSELoss(size_average=False)  # expect: loss-size-average-reduce
evaluateL2 = nn.MSELoss(size_average=False)  # expect: loss-size-average-reduce
evaluateL1 = nn.L1Loss(size_average=False)  # expect: loss-size-average-reduce
optim = torch.optim.Adam(model.parameters(), lr=1e-3)

for epoch in range(1, args.epochs + 1):
    train_loss = train(Data, Data.train[0], Data.train[1], model, criterion, optim, args.batch_size)
    val_rse, val_rae = evaluate(Data, Data.valid[0], Data.valid[1], model, evaluateL2, evaluateL1, args.batch_size)
    print(epoch, train_loss, val_rse, val_rae)

print(worst_errors(model, Data.test[0], Data.test[1], nn.MSELoss(reduction="none")))
print(worst_errors(model, Data.test[0], Data.test[1], nn.L1Loss()))
