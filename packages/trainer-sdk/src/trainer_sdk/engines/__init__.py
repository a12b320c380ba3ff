"""The code that runs inside a fine-tuning pod, one subpackage per engine. Installed with the
engine's extra (``trainer-sdk[torchtune]``) and by its trainer image; the client never imports
it."""
