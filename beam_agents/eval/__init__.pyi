"""The public names of `beam_agents.eval`: the one list (see `beam_agents._lazy`)."""

from beam_agents.eval.api import EvalResult as EvalResult
from beam_agents.eval.api import run_eval as run_eval
from beam_agents.eval.candidates import Candidate as Candidate
from beam_agents.eval.errors import EvalInputError as EvalInputError
from beam_agents.eval.errors import GateError as GateError
from beam_agents.eval.errors import RecordingError as RecordingError
from beam_agents.eval.scorers import FieldMatch as FieldMatch
from beam_agents.eval.scorers import LlmJudge as LlmJudge
from beam_agents.eval.scorers import Sample as Sample
from beam_agents.eval.scorers import Scorer as Scorer
from beam_agents.eval.scorers import TrajectoryMatch as TrajectoryMatch
from beam_agents.eval.scorers import UserScorer as UserScorer
