"""The names of `beam_agents.model.embedders`: the one list (see `beam_agents._lazy`)."""

from beam_agents.model.embedders.fake import FakeEmbedder as FakeEmbedder
from beam_agents.model.embedders.fake import FakeEmbedderError as FakeEmbedderError
from beam_agents.model.embedders.gemini import GeminiEmbedder as GeminiEmbedder
from beam_agents.model.embedders.local import LocalEmbedder as LocalEmbedder
from beam_agents.model.embedders.openai_compat import OpenAIEmbedder as OpenAIEmbedder
from beam_agents.model.embedders.protocol import Embedded as Embedded
from beam_agents.model.embedders.protocol import Embedder as Embedder
from beam_agents.model.embedders.protocol import EmbedderFactory as EmbedderFactory
from beam_agents.model.embedders.protocol import check_embedded as check_embedded
from beam_agents.model.embedders.protocol import check_embedder as check_embedder
from beam_agents.model.embedders.protocol import close_embedder as close_embedder
from beam_agents.model.embedders.spec import embedder_from_spec as embedder_from_spec
