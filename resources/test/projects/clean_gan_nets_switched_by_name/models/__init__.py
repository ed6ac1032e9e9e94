from .translation_model import TranslationModel


def create_model(opt):
    return TranslationModel(opt)
