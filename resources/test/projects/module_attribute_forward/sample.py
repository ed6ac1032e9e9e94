import torch
from torchvision.utils import save_image

from models import VAE

vae = VAE()
vae.load_state_dict(torch.load("vae.pt", map_location="cpu", weights_only=True))
vae.eval()
with torch.no_grad():
    z = vae.sampler.forward(64)
    images = vae.decoder.forward(z)  # expect: call-forward-directly
    save_image(images.view(64, 1, 28, 28), "samples.png")
    again = vae.decoder(z)


def interpolate(model: VAE, steps=10):
    with torch.no_grad():
        a, b = model.sampler.forward(2)
        codes = torch.stack([a + (b - a) * t / steps for t in range(steps + 1)])
        return model.decoder.forward(codes)  # expect: call-forward-directly
