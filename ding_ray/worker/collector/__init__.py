from ding_ray.worker.collector.base import ISerialCollector, create_serial_collector, get_serial_collector_cls
from ding_ray.worker.collector.battle_episode_collector import BattleEpisodeSerialCollector
from ding_ray.worker.collector.battle_sample_collector import BattleSampleSerialCollector
from ding_ray.worker.collector.episode_collector import EpisodeSerialCollector
from ding_ray.worker.collector.sample_collector import SampleSerialCollector

__all__ = [
    "BattleEpisodeSerialCollector",
    "BattleSampleSerialCollector",
    "EpisodeSerialCollector",
    "ISerialCollector",
    "SampleSerialCollector",
    "create_serial_collector",
    "get_serial_collector_cls",
]
