from torch import nn

from vae.mixture import mixture_log_likelihood, pinned_buffer


class Likelihood(nn.Module):
    def forward(self, x, params):
        if x.is_cuda:
            self.scratch = pinned_buffer(x.shape)
        return self.log_likelihood(x, params)

    def log_likelihood(self, x, params):
        raise NotImplementedError


class MixtureLikelihood(Likelihood):
    def __init__(self, dim, components):
        super().__init__()
        self.head = nn.Linear(dim, 2 * components)

    def log_likelihood(self, x, params):
        logits, means = self.head(params).chunk(2, dim=-1)
        return mixture_log_likelihood(x, logits, means)
