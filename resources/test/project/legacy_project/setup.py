from setuptools import setup

REQUIREMENTS = [
    "torch>=1.12,<1.14",
    "numpy",
]

setup(
    name="legacy",
    install_requires=REQUIREMENTS,
    extras_require={"audio": ["torchaudio==0.13.1"]},
    python_requires=">=3.8",
    entry_points={"console_scripts": ["legacy-train=legacy.train:main"]},
)
