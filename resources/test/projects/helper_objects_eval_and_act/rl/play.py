import gymnasium as gym

from rl.agent import Agent


def main(episodes=500):
    env = gym.make("CartPole-v1")
    agent = Agent(env.observation_space.shape[0], env.action_space.n)
    for episode in range(episodes):
        state, _ = env.reset()
        done = False
        while not done:
            action = agent.act(state)
            next_state, reward, terminated, truncated, _ = env.step(action)
            done = terminated or truncated
            agent.learn(state, action, reward, next_state, done)
            state = next_state


if __name__ == "__main__":
    main()
