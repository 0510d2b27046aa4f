"""A Dataflow job built offline, for a fragment written for a streaming job on Dataflow.

`<!-- fragment: dataflow_dry_run -->`: `options` run the pipeline on the
DataflowRunner with `--dry_run=True` (the job graph is built in full and nothing is
submitted) in streaming mode, and `CAPTURE_SUBSCRIPTION` names a Pub/Sub
subscription.
"""

from apache_beam.options.pipeline_options import PipelineOptions

options = PipelineOptions(
    [
        "--runner=DataflowRunner",
        "--dry_run=True",
        "--streaming",
        "--project=my-project",
        "--region=us-central1",
        "--temp_location=gs://my-bucket/tmp",
    ]
)
CAPTURE_SUBSCRIPTION = "projects/my-project/subscriptions/alerts-capture"

# <fragment>
