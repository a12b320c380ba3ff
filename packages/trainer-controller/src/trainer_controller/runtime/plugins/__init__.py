"""One module per plugin; ``trainer_controller.runtime.registry`` lists them in order."""
