import torch
import torch.nn.functional as F
from tqdm.auto import tqdm

from data import faces_loader
from models import build_discriminator, build_generator

ROOT = "data/faces"
BATCH = 128
Z_DIM = 128
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

disc = build_discriminator().to(device)
gen = build_generator(Z_DIM).to(device)


def step_d(real, opt_d):
    """One update of the critic; returns its loss and mean scores on real / generated images."""
    opt_d.zero_grad()
    p_real = disc(real)
    loss_real = F.binary_cross_entropy(p_real, torch.ones_like(p_real))  # expect: bce-after-sigmoid

    z = torch.randn(BATCH, Z_DIM, 1, 1, device=device)
    generated = gen(z)
    p_gen = disc(generated)  # expect: gan-discriminator-on-undetached-fake
    loss_gen = F.binary_cross_entropy(p_gen, torch.zeros_like(p_gen))  # expect: bce-after-sigmoid

    loss = loss_real + loss_gen
    loss.backward()
    opt_d.step()
    return loss.item(), p_real.mean().item(), p_gen.mean().item()


def step_g(opt_g):
    opt_g.zero_grad()
    z = torch.randn(BATCH, Z_DIM, 1, 1, device=device)
    p = disc(gen(z))
    loss = F.binary_cross_entropy(p, torch.ones_like(p))  # expect: bce-after-sigmoid
    loss.backward()
    opt_g.step()
    return loss.item()


def fit(epochs, lr):
    loader = faces_loader(ROOT, BATCH)
    opt_d = torch.optim.Adam(disc.parameters(), lr=lr, betas=(0.5, 0.999))
    opt_g = torch.optim.Adam(gen.parameters(), lr=lr, betas=(0.5, 0.999))
    log = []
    for epoch in range(epochs):
        for real, _ in tqdm(loader, desc=f"epoch {epoch + 1}/{epochs}"):
            real = real.to(device, non_blocking=True)
            d_loss, s_real, s_gen = step_d(real, opt_d)
            g_loss = step_g(opt_g)
        log.append((d_loss, g_loss, s_real, s_gen))
        print(f"epoch {epoch + 1}: d {d_loss:.3f} g {g_loss:.3f} D(x) {s_real:.3f} D(G(z)) {s_gen:.3f}")
    torch.save({"gen": gen.state_dict(), "disc": disc.state_dict()}, "gan_faces.pt")
    return log


if __name__ == "__main__":
    fit(epochs=25, lr=2e-4)
