import torch


def evaluate(model_path, make_net, episodes=10, device="cpu"):
    net = make_net().to(device)
    net.load_state_dict(torch.load(model_path, map_location=device))  # expect: torch-load-without-weights-only
    net.eval()
    returns = []
    with torch.no_grad():
        for _ in range(episodes):
            obs = torch.zeros(1, 4, device=device)
            returns.append(net(obs).max().item())
    return returns


if __name__ == "__main__":
    from huggingface_hub import hf_hub_download

    from dqn import QNetwork

    path = hf_hub_download(repo_id="someone/CartPole-v1-dqn", filename="dqn.model")
    evaluate(path, QNetwork)
