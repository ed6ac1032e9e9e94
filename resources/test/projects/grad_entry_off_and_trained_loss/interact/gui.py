class Canvas:
    def __init__(self, controller):
        self.controller = controller
        self.mask = None

    def on_click(self, image, clicks):
        self.mask = self.controller.interact(image, self.mask, clicks)
        return self.mask


def launch(controller, frames, clicks):
    canvas = Canvas(controller)
    for image, c in zip(frames, clicks):
        canvas.on_click(image, c)
