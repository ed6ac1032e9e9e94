from .speech import SpeechModel, Tagger

__all__ = ["SpeechModel", "Tagger"]
