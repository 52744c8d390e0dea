"""Seeded generator for the video annotation dataset: clip metadata records, perception and
QC facts, review panels, and the annotation requests (task inputs).

The clips are metadata records only: nothing is decoded. Scenario lists rotate so every SOP
branch appears many times; labels are not decided here, the reference policy derives them
from what the tools return.
"""

from __future__ import annotations

import random
from datetime import date, timedelta
from pathlib import Path
from typing import Any

from sopgym.core.domain import GeneratedData
from sopgym.core.tasks import Task

TASK_COUNT = 168
PROJECTS = {"AVP-URB": "urban", "AVP-HWY": "highway", "AVP-SUB": "suburban", "AVP-PRK": "parking"}
CAMERAS = ["front_center", "front_left", "front_right", "rear_center"]
CLASSES = ["vehicle"] * 5 + ["pedestrian"] * 3 + ["cyclist", "traffic_sign", "traffic_light"]
MODES = ["none", "instance", "panoptic"]

GOOD_FORMATS = [("mp4", "h264"), ("mp4", "h265"), ("mkv", "h264"), ("mkv", "h265")]
GOOD_FPS = [24.0, 25.0, 29.97, 30.0, 50.0, 59.94, 60.0]
GOOD_RESOLUTIONS = [(1280, 720), (1920, 1080), (1920, 1200), (2560, 1440), (3840, 2160)]
GOOD_DEPTHS = [8, 10, 12]

# Input scenarios rotate over all tasks; the variants of each failure rotate in turn, some of
# them failing a later requirement too (the SOP reports the first failure only).
INPUT_SCENARIOS = ["ok", "ok", "bad_format", "ok", "ok", "bad_fps", "ok", "ok",
                   "bad_resolution", "ok", "ok", "bad_depth", "ok", "missing"]  # fmt: skip
BAD_VARIANTS: dict[str, list[dict[str, Any]]] = {
    "bad_format": [
        {"container_format": "avi", "video_codec": "mjpeg"},
        {"container_format": "mp4", "video_codec": "vp9", "frame_rate": 15.0},
        {"container_format": "mov", "video_codec": "h264", "color_depth_bits": 6},
        {"container_format": "mov", "video_codec": "prores"},
        {"container_format": "webm", "video_codec": "vp9"},
    ],
    "bad_fps": [
        {"frame_rate": 23.976},
        {"frame_rate": None},
        {"frame_rate": 120.0, "width": 960, "height": 540},
        {"frame_rate": 15.0},
        {"frame_rate": 20.0},
    ],
    "bad_resolution": [
        {"width": 854, "height": 480},
        {"width": 1280, "height": 540},
        {"width": 960, "height": 720, "color_depth_bits": 16},
        {"width": 1024, "height": 576},
    ],
    "bad_depth": [{"color_depth_bits": 6}, {"color_depth_bits": 16}, {"color_depth_bits": None}],
}

# Over the clips that pass input checks: lighting/weather, QC outcome and mask mode rotate
# with co-prime periods so they combine freely.
SCENES = ["day", "night", "day", "rain", "overcast", "night_rain", "dusk"]
SCENE_PROFILE = {
    "day": "standard",
    "overcast": "standard",
    "dusk": "standard",
    "night": "low_light",
    "night_rain": "low_light",
    "rain": "adverse_weather",
}
QC_SCENARIOS = [
    "clean",
    "box_fail",
    "clean",
    "temporal_fail",
    "boundary_review",
    "agreement_fail",
    "low_review",
    "mask_fail",
    "clean",
    "temporal_and_agreement",
]


def generate(seed: int, files_dir: Path) -> GeneratedData:
    import pandas as pd

    rng = random.Random(seed)
    annotators = _annotators()
    videos, scenes, outputs, audits, panels, tasks = [], [], [], [], [], []
    used: dict[str, int] = {}
    passed = 0
    for i in range(TASK_COUNT):
        video_id = f"VID-{100000 + i * 37:06d}"
        project = list(PROJECTS)[i % len(PROJECTS)]
        scenario = INPUT_SCENARIOS[i % len(INPUT_SCENARIOS)]
        scene_kind, qc, mode = "day", "clean", MODES[i % len(MODES)]
        if scenario == "ok":
            scene_kind = SCENES[passed % len(SCENES)]
            qc = QC_SCENARIOS[passed % len(QC_SCENARIOS)]
            mode = MODES[passed % len(MODES)]
            if qc == "mask_fail" and mode == "none":
                mode = "instance"
            passed += 1
        request = date(2026, 2, 2) + timedelta(days=rng.randrange(200))
        staff = [a["annotator_id"] for a in annotators if a["project_code"] == project]
        tasks.append(
            Task(
                id=f"video_annotation-{i:03d}",
                domain="video_annotation",
                inputs={
                    "video_id": video_id,
                    "project_code": project,
                    "segmentation_mode": mode,
                    "annotator_ids": rng.sample([a for a in staff if a != _inactive(project)], 2),
                    "request_date": request.isoformat(),
                },
            )
        )
        if scenario == "missing":  # the request names a clip the catalog never ingested
            continue
        variant: dict[str, Any] = {}
        if scenario in BAD_VARIANTS:
            variants = BAD_VARIANTS[scenario]
            variant = variants[used.get(scenario, 0) % len(variants)]
            used[scenario] = used.get(scenario, 0) + 1
        videos.append(_video(rng, video_id, request, variant))
        scenes.append(_scene(rng, video_id, scene_kind, PROJECTS[project]))
        outputs.append(_objects(rng, video_id))
        audits.append(_audit(rng, video_id, SCENE_PROFILE[scene_kind], qc))
        panels.extend(_panels(rng, video_id, qc))
    return GeneratedData(
        tables={
            "videos": pd.DataFrame(videos),
            "scene_analysis": pd.DataFrame(scenes),
            "model_outputs": pd.DataFrame(outputs),
            "qc_audits": pd.DataFrame(audits),
            "annotators": pd.DataFrame(annotators),
            "review_panels": pd.DataFrame(panels),
        },
        tasks=tasks,
    )


def _inactive(project: str) -> str:
    """One annotator per project has left; requests never name them."""
    return f"ANN-{1000 + list(PROJECTS).index(project) * 10 + 4:04d}"


def _annotators() -> list[dict[str, Any]]:
    return [
        {
            "annotator_id": f"ANN-{1000 + p * 10 + k:04d}",
            "project_code": project,
            "active": f"ANN-{1000 + p * 10 + k:04d}" != _inactive(project),
        }
        for p, project in enumerate(PROJECTS)
        for k in range(5)
    ]


def _video(rng: random.Random, video_id: str, request: date, variant: dict) -> dict[str, Any]:
    """A catalog record; the probed technical fields sit in one nested record so that a
    field the encoder did not report stays null without turning integers into floats."""
    container, codec = rng.choice(GOOD_FORMATS)
    width, height = rng.choice(GOOD_RESOLUTIONS)
    probe: dict[str, Any] = {
        "container_format": container,
        "video_codec": codec,
        "frame_rate": rng.choice(GOOD_FPS),
        "width": width,
        "height": height,
        "color_depth_bits": rng.choice(GOOD_DEPTHS),
        **variant,
    }
    duration = float(rng.randrange(30, 181))
    fps = probe["frame_rate"]
    probe["frame_count"] = round(duration * fps) if fps else None
    return {
        "video_id": video_id,
        "duration_s": duration,
        "camera_position": rng.choice(CAMERAS),
        "capture_date": (request - timedelta(days=rng.randrange(3, 60))).isoformat(),
        "probe": probe,
    }


def _scene(rng: random.Random, video_id: str, kind: str, road: str) -> dict[str, Any]:
    luminance = {
        "day": (110, 200),
        "overcast": (66, 105),
        "dusk": (61, 75),
        "rain": (70, 140),
        "night": (14, 55),
        "night_rain": (18, 50),
    }[kind]
    wet = kind in ("rain", "night_rain")
    low, high = (0.40, 0.90) if wet else (0.0, 0.36)
    measured = round(rng.uniform(low, high), 2)
    precipitation = rng.choice([0.40, measured]) if wet else measured  # 0.40 is adverse
    # dusk sits on the low-light boundary: exactly 60 is not "below 60"
    brightness = (
        rng.choice([60, rng.randint(*luminance)]) if kind == "dusk" else rng.randint(*luminance)
    )
    return {
        "video_id": video_id,
        "mean_luminance": brightness,
        "precipitation_index": precipitation,
        "glare_fraction": round(rng.uniform(0.0, 0.3), 2),
        "road_type": road,
    }


def _objects(rng: random.Random, video_id: str) -> dict[str, Any]:
    objects = [
        {"object_class": rng.choice(CLASSES), "confidence": round(rng.uniform(0.2, 0.99), 3)}
        for _ in range(rng.randint(18, 48))
    ]
    return {"video_id": video_id, "objects": objects}


def _audit(rng: random.Random, video_id: str, profile: str, qc: str) -> dict[str, Any]:
    """Box IoU is best under the profile that suits the scene; other profiles score lower."""
    good_iou = (0.52, 0.66) if qc == "box_fail" else (0.73, 0.93)
    best = rng.uniform(*good_iou)
    box = {
        f"box_iou_{name}": round(best if name == profile else best - rng.uniform(0.08, 0.2), 3)
        for name in ("standard", "low_light", "adverse_weather")
    }
    masks = (0.45, 0.60) if qc == "mask_fail" else (0.70, 0.90)
    switching = qc in ("temporal_fail", "temporal_and_agreement")
    disagreeing = qc in ("agreement_fail", "temporal_and_agreement")
    return {
        "video_id": video_id,
        **box,
        "mask_iou_instance": round(rng.uniform(*masks), 3),
        "mask_iou_panoptic": round(rng.uniform(*masks), 3),
        "switches_per_100_frames": round(
            rng.uniform(2.8, 5.0) if switching else rng.uniform(0.1, 1.4), 2
        ),
        "cohen_kappa": round(
            rng.uniform(0.48, 0.70) if disagreeing else rng.uniform(0.78, 0.96), 3
        ),
    }


def _panels(rng: random.Random, video_id: str, qc: str) -> list[dict[str, Any]]:
    """Both panel tiers exist for every clip; which one is asked for is the SOP's call."""
    if qc == "low_review":
        standard = [rng.randint(26, 33) / 10 for _ in range(3)]
    elif qc == "boundary_review":  # means of exactly 3.50 (passes) or 3.4667 (fails)
        standard = rng.choice([[3.4, 3.5, 3.6], [3.5, 3.5, 3.5], [3.4, 3.5, 3.5], [3.3, 3.5, 3.6]])
    else:
        standard = [rng.randint(36, 49) / 10 for _ in range(3)]
    expert = [rng.randint(20, 46) / 10 for _ in range(3)]
    return [
        {
            "panel_key": f"{video_id}/{tier}",
            "reviewer_ids": [f"REV-{rng.randrange(100, 999)}" for _ in range(3)],
            "reviewer_scores": scores,
        }
        for tier, scores in (("standard", standard), ("expert", expert))
    ]
