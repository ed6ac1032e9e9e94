import gym
import numpy as np

from agent import Reinforce


def main(episodes=500):
    env = gym.make("Pendulum-v1")
    agent = Reinforce(env.observation_space.shape[0], 64, env.action_space.shape[0])
    for episode in range(episodes):
        state, _ = env.reset(seed=episode)
        done = False
        while not done:
            action = agent.select_action(np.asarray(state))
            state, reward, terminated, truncated, _ = env.step(action)
            agent.rewards.append(reward)
            done = terminated or truncated
        agent.finish_episode()


if __name__ == "__main__":
    main()
