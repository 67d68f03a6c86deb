# A reward that checks the params dict is the one the DeepRacer simulator passes: the same keys in
# the same order, the same types. It returns a number built from the values (so the caller can
# compare with the C side) and raises on the first mismatch.
import math
import random

KEYS = ['all_wheels_on_track', 'x', 'y', 'heading', 'distance_from_center', 'projection_distance',
        'progress', 'steps', 'speed', 'steering_angle', 'track_width', 'track_length', 'waypoints',
        'closest_waypoints', 'is_left_of_center', 'is_reversed', 'closest_objects',
        'objects_location', 'objects_left_of_center', 'object_in_camera', 'objects_speed',
        'objects_heading', 'objects_distance_from_center', 'objects_distance', 'is_crashed',
        'is_offtrack', 'sim_time']
BOOLS = ['all_wheels_on_track', 'is_left_of_center', 'is_reversed', 'object_in_camera',
         'is_crashed', 'is_offtrack']
FLOATS = ['x', 'y', 'heading', 'distance_from_center', 'projection_distance', 'progress', 'steps',
          'speed', 'steering_angle', 'track_width', 'track_length', 'sim_time']
LISTS = ['objects_location', 'objects_left_of_center', 'objects_speed', 'objects_heading',
         'objects_distance_from_center', 'objects_distance']

kept = None


def reward_function(params):
    global kept
    if list(params.keys()) != KEYS:
        raise ValueError('keys %s' % list(params.keys()))
    for k in BOOLS:
        if type(params[k]) is not bool:
            raise TypeError('%s is %s' % (k, type(params[k])))
    for k in FLOATS:
        if type(params[k]) is not float or not math.isfinite(params[k]):
            raise TypeError('%s is %r' % (k, params[k]))
    for k in LISTS:
        if params[k] != []:
            raise TypeError('%s is %r' % (k, params[k]))
    wp = params['waypoints']
    if type(wp) is not list or not all(type(p) is tuple and len(p) == 2 and type(p[0]) is float for p in wp):
        raise TypeError('waypoints')
    cw = params['closest_waypoints']
    if type(cw) is not list or len(cw) != 2 or not all(type(i) is int for i in cw):
        raise TypeError('closest_waypoints %r' % (cw,))
    if params['closest_objects'] != [0, 0]:
        raise TypeError('closest_objects')
    if not -180 <= params['heading'] <= 180 or params['steps'] != int(params['steps']):
        raise ValueError('heading or steps')
    # a reward may keep the dict: the simulator passes a fresh copy each step, so what was kept
    # must not change under it
    if kept is not None and kept['steps'] != kept_steps[0]:
        raise ValueError('a kept params dict changed')
    kept = params
    kept_steps[0] = params['steps']
    random.random()
    return (params['x'] + 2 * params['y'] + params['progress'] / 100 + params['steps'] +
            (1.0 if params['is_left_of_center'] else 0.0) + len(wp) + cw[1] +
            (10.0 if params['all_wheels_on_track'] else 0.0))


kept_steps = [0.0]
