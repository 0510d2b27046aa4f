"""The public names of `beam_agents.tools`: the one list (see `beam_agents._lazy`)."""

from beam_agents.tools.calls import ToolCall as ToolCall
from beam_agents.tools.calls import ToolHandler as ToolHandler
from beam_agents.tools.calls import ToolResult as ToolResult
from beam_agents.tools.errors import InvalidIntentIdError as InvalidIntentIdError
from beam_agents.tools.errors import ToolCallError as ToolCallError
from beam_agents.tools.errors import ToolError as ToolError
from beam_agents.tools.errors import UnknownToolError as UnknownToolError
from beam_agents.tools.execute import ExecuteIntents as ExecuteIntents
from beam_agents.tools.execute import ExecuteIntentsResult as ExecuteIntentsResult
from beam_agents.tools.executor import ToolFailure as ToolFailure
from beam_agents.tools.ledger.base import Busy as Busy
from beam_agents.tools.ledger.base import Claimed as Claimed
from beam_agents.tools.ledger.base import Recorded as Recorded
from beam_agents.tools.ledger.base import ToolLedger as ToolLedger
from beam_agents.tools.ledger.factory import open_ledger as open_ledger
from beam_agents.tools.ledger.memory import InMemoryToolLedger as InMemoryToolLedger
from beam_agents.tools.mcp_tools import McpTool as McpTool
from beam_agents.tools.mcp_tools import McpTools as McpTools
from beam_agents.tools.pubsub import PubSubPublish as PubSubPublish
from beam_agents.tools.webhook import HttpWebhook as HttpWebhook
