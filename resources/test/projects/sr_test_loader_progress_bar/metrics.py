import torch
from tqdm import tqdm


def psnr(sr, hr):
    mse = torch.mean((sr - hr) ** 2)
    return 10 * torch.log10(1.0 / mse)


def test_psnr(model, dataloader, device):
    model.eval()
    progress_bar = tqdm(enumerate(dataloader), total=len(dataloader))
    total = 0.0
    with torch.no_grad():
        for i, (lr, hr) in progress_bar:
            value = psnr(model(lr.to(device)), hr.to(device)).item()
            total += value
            progress_bar.set_description(f"[{i + 1}/{len(dataloader)}] PSNR {value:.2f}dB")
    return total / len(dataloader)
