import torch


def evaluate(model_path, make_net, episodes=10, device="cpu"):
    net = make_net().to(device)
    data = torch.load(model_path, map_location=device, weights_only=True)
    net.load_state_dict(data["model_weights"])
    net.eval()
    with torch.no_grad():
        return [net(torch.zeros(1, 4, device=device)).sum().item() for _ in range(episodes)]
