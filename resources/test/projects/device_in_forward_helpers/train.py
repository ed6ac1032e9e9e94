import torch

from vae.likelihoods import MixtureLikelihood


def train(loader, epochs=10):
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    likelihood = MixtureLikelihood(16, 5).to(device)
    optimizer = torch.optim.Adam(likelihood.parameters(), lr=1e-3)
    for epoch in range(epochs):
        for x, params in loader:
            x, params = x.to(device), params.to(device)
            loss = -likelihood(x, params)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
