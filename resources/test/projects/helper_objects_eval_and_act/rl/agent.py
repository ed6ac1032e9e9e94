import random

import torch
from torch import nn


class QNet(nn.Module):
    def __init__(self, n_obs, n_actions):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(n_obs, 128), nn.ReLU(), nn.Linear(128, n_actions))

    def forward(self, x):
        return self.body(x)


class Agent:
    def __init__(self, n_obs, n_actions, epsilon=0.1):
        self.q_net = QNet(n_obs, n_actions)
        self.optimizer = torch.optim.Adam(self.q_net.parameters(), lr=1e-3)
        self.n_actions = n_actions
        self.epsilon = epsilon

    def act(self, state):
        if random.random() < self.epsilon:
            action = random.randrange(self.n_actions)
        else:
            q = self.q_net(torch.as_tensor(state, dtype=torch.float32))  # expect: eval-without-no-grad
            action = q.argmax().item()
        return action

    def learn(self, state, action, reward, next_state, done):
        state = torch.as_tensor(state, dtype=torch.float32)
        next_state = torch.as_tensor(next_state, dtype=torch.float32)
        q = self.q_net(state)[action]
        with torch.no_grad():
            target = reward + 0.99 * self.q_net(next_state).max() * (1 - done)
        loss = (q - target) ** 2
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
