"""The torchtune engine: the recipe ``tune run`` starts in a torchtune runtime's pods
(``recipe``), its model families (``families``), placement (``distributed``) and outputs
(``outputs``); ``keys`` (no torch) says what the recipe reads."""
